package config

import (
	"net/url"
	"reflect"
)

// RedactedText is the text that replaces a secret.
const RedactedText = "[redacted]"

// Redacted returns a deep copy of c in which every secret is replaced by
// "[redacted]": plugin passwords and tokens, the push token, the webhook
// secret, the whole http url and every http header value. Push and
// webhook URLs keep only their scheme and host.
// Empty secrets stay empty (showing that none is set gives nothing away).
func (c *Config) Redacted() *Config {
	out := deepCopy(reflect.ValueOf(*c)).Interface().(Config)
	redactSection(schema(), reflect.ValueOf(&out).Elem())
	return &out
}

func redactSection(f *field, v reflect.Value) {
	for _, c := range f.children {
		fv := v.FieldByIndex(c.index)
		switch c.kind {
		case kindSection:
			if c.optional {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			redactSection(c, fv)
		case kindInstances:
			for _, k := range fv.MapKeys() {
				inst := reflect.New(fv.Type().Elem()).Elem()
				inst.Set(fv.MapIndex(k))
				redactSection(c, inst)
				fv.SetMapIndex(k, inst)
			}
		case kindHeaders:
			if c.secret {
				for _, k := range fv.MapKeys() {
					fv.SetMapIndex(k, reflect.ValueOf(RedactedText))
				}
			}
		case kindString:
			switch {
			case fv.String() == "":
			case c.secret:
				fv.SetString(RedactedText)
			case c.urlCreds:
				fv.SetString(redactURL(fv.String()))
			}
		}
	}
}

// redactURL keeps the scheme and host of a URL and replaces the rest:
// the path (an ntfy topic is its own password; a chat webhook's path
// holds its token), the user info, the query and the fragment. A URL with
// nothing past its host is kept as it is; one that does not parse is
// replaced whole. Redacting twice changes nothing.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return RedactedText
	}
	if u.User == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" {
		return raw
	}
	return u.Scheme + "://" + u.Host + "/" + RedactedText
}

// deepCopy copies v, following pointers, maps and slices, so that changing
// the copy cannot reach the original.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, deepCopy(v.MapIndex(k)))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v) // copies unexported fields (netip values) as a whole
		for i := range v.NumField() {
			if s.Field(i).CanSet() {
				s.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return s
	default:
		return v
	}
}
