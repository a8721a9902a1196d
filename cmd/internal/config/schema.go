package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"
)

// kind is how a key is read and written.
type kind int

const (
	kindSection   kind = iota // a struct (or *struct: an optional block)
	kindInstances             // map[string]struct: names chosen by the user, one level
	kindHeaders               // map[string]string
	kindString
	kindInt
	kindBool
	kindDuration
	kindPrefixes // []netip.Prefix
	kindAddrs    // []netip.Addr
	kindStrings  // []string
)

// field is one key of the schema. The schema is derived from the Config
// struct by reflection (yaml and cfg tags), so the struct is the single list
// of keys.
type field struct {
	name     string // the key at its level
	pattern  string // dotted path from the root, "*" standing for an instance name
	kind     kind
	index    []int        // index path of the struct field in its parent struct (inline fields add a step)
	typ      reflect.Type // the Go type of the field
	optional bool         // a *struct block, present or absent
	secret   bool         // value (or, for headers, every value) is secret
	urlCreds bool         // credentials inside the URL are secret
	bareAddr bool         // a prefix list that also takes single addresses
	children []*field     // for kindSection, and for kindInstances the instance's keys
	byName   map[string]*field
}

var (
	typDuration = reflect.TypeFor[Duration]()
	// typStdDuration is a time.Duration field of a type another package
	// owns (a plugin kind's Config); it reads and writes as a Duration.
	typStdDuration = reflect.TypeFor[time.Duration]()
	typPrefix      = reflect.TypeFor[netip.Prefix]()
	typAddr        = reflect.TypeFor[netip.Addr]()
)

// schema returns the key tree of Config. It is rebuilt on each call (it is
// small) so the package keeps no global state.
func schema() *field {
	root := &field{kind: kindSection, typ: reflect.TypeFor[Config]()}
	root.children = structFields(root.typ, "")
	root.index = nil
	indexChildren(root)
	return root
}

func structFields(t reflect.Type, prefix string) []*field {
	return structFieldsAt(t, prefix, nil)
}

// structFieldsAt lists the keys of t, a struct reached by the field
// index path at; a field tagged `yaml:",inline"` (the plugin kinds'
// shared sources.EndpointConfig) contributes its keys beside the others.
func structFieldsAt(t reflect.Type, prefix string, at []int) []*field {
	var out []*field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		index := append(append([]int(nil), at...), i)
		if name == "" && opts == "inline" && sf.Type.Kind() == reflect.Struct {
			out = append(out, structFieldsAt(sf.Type, prefix, index)...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		f := &field{name: name, pattern: join(prefix, name), index: index, typ: sf.Type}
		for opt := range strings.SplitSeq(sf.Tag.Get("cfg"), ",") {
			switch opt {
			case "secret":
				f.secret = true
			case "url":
				f.urlCreds = true
			case "bare-addr":
				f.bareAddr = true
			case "":
			default:
				panic(fmt.Sprintf("config: unknown cfg tag %q on %s", opt, f.pattern)) // programming error, caught by every test
			}
		}
		ft := sf.Type
		switch {
		case ft == typDuration || ft == typStdDuration:
			f.kind = kindDuration
		case ft.Kind() == reflect.String:
			f.kind = kindString
		case ft.Kind() == reflect.Int:
			f.kind = kindInt
		case ft.Kind() == reflect.Bool:
			f.kind = kindBool
		case ft.Kind() == reflect.Slice && ft.Elem() == typPrefix:
			f.kind = kindPrefixes
		case ft.Kind() == reflect.Slice && ft.Elem() == typAddr:
			f.kind = kindAddrs
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			f.kind = kindStrings
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
			f.kind = kindHeaders
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			f.kind = kindInstances
			f.children = structFields(ft.Elem(), f.pattern+".*")
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			f.kind = kindSection
			f.optional = true
			f.children = structFields(ft.Elem(), f.pattern)
		case ft.Kind() == reflect.Struct:
			f.kind = kindSection
			f.children = structFields(ft, f.pattern)
		default:
			panic(fmt.Sprintf("config: unsupported type %s for %s", ft, f.pattern)) // programming error
		}
		indexChildren(f)
		out = append(out, f)
	}
	return out
}

func indexChildren(f *field) {
	if len(f.children) == 0 {
		return
	}
	f.byName = make(map[string]*field, len(f.children))
	for _, c := range f.children {
		f.byName[c.name] = c
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// isLeaf reports whether f holds a value rather than further keys.
func (f *field) isLeaf() bool {
	return f.kind != kindSection && f.kind != kindInstances && f.kind != kindHeaders
}

// walk calls fn for f's descendants in schema order (depth first).
func (f *field) walk(fn func(*field)) {
	for _, c := range f.children {
		fn(c)
		c.walk(fn)
	}
}

// patterns lists every key of the schema (sections, instance levels and
// leaves) as dotted patterns in schema order. Instance levels appear as
// "plugins.routerapi.*".
func patterns() []string {
	var out []string
	schema().walk(func(f *field) {
		out = append(out, f.pattern)
		if f.kind == kindInstances {
			out = append(out, f.pattern+".*")
		}
	})
	return out
}

// envName gives the SVC_ variable of a dotted path (a concrete path, or a
// pattern whose "*" becomes <NAME>).
func envName(path string) string {
	s := strings.ToUpper(strings.ReplaceAll(path, ".", "__"))
	return "SVC_" + strings.ReplaceAll(s, "*", "<NAME>")
}

// suggest returns the candidate closest to s, or "" if none is close. Case
// differences count as close.
func suggest(s string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		d := levenshtein(strings.ToLower(s), c)
		if limit := max(2, len(c)/3); d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20 // not worth comparing; never "close"
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// childNames lists the keys under f in schema order.
func (f *field) childNames() []string {
	out := make([]string, len(f.children))
	for i, c := range f.children {
		out[i] = c.name
	}
	return out
}

// elsewhere returns the patterns of other keys named name (to say "it belongs
// under scan.devices" for a key put in the wrong section).
func elsewhere(root *field, name string) []string {
	var out []string
	root.walk(func(f *field) {
		if f.name == name {
			out = append(out, f.pattern)
		}
	})
	return out
}
