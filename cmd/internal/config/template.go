package config

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// BodyFuncs are the functions an http destination's body template may call:
//
//	json     JSON-encodes a value, quotes included: {"text": {{json .Summary}}}
//	upper    upper-cases a string
//	lower    lower-cases a string
//	default  gives its first argument when the second is empty or missing:
//	         {{.Device.Label | default "unnamed"}}
//
// The notifier should execute bodies parsed by BodyTemplate so that what
// `config check` accepts is exactly what `serve` runs.
func BodyFuncs() template.FuncMap {
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

// BodyTemplate parses an http destination's body with BodyFuncs. A missing
// map key is an execution error rather than "<no value>".
func BodyTemplate(body string) (*template.Template, error) {
	return template.New("body").Option("missingkey=error").Funcs(BodyFuncs()).Parse(body)
}

var templateErr = regexp.MustCompile(`^template: [^:]*:(\d+): (.*)$`)

// templateErrorPos extracts the line of a text/template parse error and
// finds its column, which the parser does not report: it re-parses the body
// cut after each action on that line and takes the first action whose prefix
// fails with the same message. col is 0 when no action can be blamed.
func templateErrorPos(body string, err error) (line, col int, msg string) {
	m := templateErr.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, 0, err.Error()
	}
	line, _ = strconv.Atoi(m[1])
	msg = m[2]
	lines := strings.SplitAfter(body, "\n")
	if line < 1 || line > len(lines) {
		return line, 0, msg
	}
	start := len(strings.Join(lines[:line-1], ""))
	text := lines[line-1]
	for off, tries := 0, 0; tries < maxColumnTries; tries++ {
		i := strings.Index(text[off:], "{{")
		if i < 0 {
			return line, 0, msg
		}
		actionStart := off + i
		end := len(body)
		if j := strings.Index(body[start+actionStart:], "}}"); j >= 0 {
			end = start + actionStart + j + 2
		}
		_, perr := BodyTemplate(body[:end])
		if pm := templateErr.FindStringSubmatch(errString(perr)); pm != nil && pm[1] == m[1] && pm[2] == msg {
			return line, actionStart + 1, msg
		}
		off = actionStart + 2
	}
	return line, 0, msg
}

// maxColumnTries bounds the re-parses templateErrorPos does.
const maxColumnTries = 32

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
