// Package httpnotify is the http delivery channel of notifications: a
// request to the destination's URL whose body is a Go text/template. It
// owns the template's functions and how a body is parsed, which the
// configuration loader uses to check `notify.<name>.http.body` at start.
package httpnotify

import (
	"encoding/json"
	"reflect"
	"strings"
	"text/template"
)

// Funcs are the functions a body template may call (DECISIONS.md):
//
//	json     JSON-encodes a value, quotes included: {"text": {{json .Summary}}}
//	upper    upper-cases a string
//	lower    lower-cases a string
//	default  gives its first argument when the second is empty or missing:
//	         {{.Device.Label | default "unnamed"}}
func Funcs() template.FuncMap {
	return template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"upper": strings.ToUpper,
		"lower": strings.ToLower,
		"default": func(def any, given ...any) any {
			if len(given) == 0 || isEmpty(given[0]) {
				return def
			}
			return given[0]
		},
	}
}

// isEmpty reports whether v is nil or the zero value of its type, or an
// empty string, slice or map.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return rv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return rv.IsZero()
}

// ParseBody parses a destination's body with Funcs. A missing map key is
// an execution error rather than "<no value>".
func ParseBody(body string) (*template.Template, error) {
	return template.New("body").Option("missingkey=error").Funcs(Funcs()).Parse(body)
}

// Config is a destination's http block (notify.<name>.http).
type Config struct {
	URL     string            `yaml:"url" cfg:"secret"`     // required; http(s); secret as a whole (it may hold a token)
	Headers map[string]string `yaml:"headers" cfg:"secret"` // values are secret
	Body    string            `yaml:"body"`                 // required; parses with ParseBody
}
