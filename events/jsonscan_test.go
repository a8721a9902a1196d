package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// scanCases are single JSON values, valid or not, for the scanner.
var scanCases = map[string]string{
	"zero":              `0`,
	"int":               ` -12 `,
	"negative zero":     `-0`,
	"max int64":         `9223372036854775807`,
	"min int64":         `-9223372036854775808`,
	"max uint64":        `18446744073709551615`,
	"uint64 overflow":   `18446744073709551616`,
	"long overflow":     `184467440737095516150`,
	"leading zero":      `01`,
	"fraction":          `1.5`,
	"exponent":          `1e3`,
	"minus space":       `- 1`,
	"lone minus":        `-`,
	"string":            `"a b"`,
	"unicode string":    `"é ü"`,
	"escaped string":    `"a\nb\u00e9\/"`,
	"bad escape":        `"a\x"`,
	"short escape":      `"\u12"`,
	"invalid utf-8":     "\"a\xffb\"",
	"control char":      "\"a\x01\"",
	"unterminated":      `"abc`,
	"true":              `true`,
	"false":             ` false`,
	"bad literal":       `tru`,
	"null":              `null`,
	"time":              `"2026-02-03T04:05:06.000007Z"`,
	"time with offset":  `"2026-02-03T04:05:06+02:00"`,
	"bad time":          `"yesterday"`,
	"object":            `{"a":[1,{"b":null}],"c\u0064":"x"}`,
	"object whitespace": " { \"a\" : [ 1 , 2 ] , \"b\" : { } }\n",
	"trailing comma":    `[1,]`,
	"missing colon":     `{"a" 1}`,
	"deep":              strings.Repeat("[", 150) + strings.Repeat("]", 150),
	"too deep":          strings.Repeat("[", 300) + strings.Repeat("]", 300),
	"empty":             ``,
}

func TestJSONScannerIsUnmarshal(t *testing.T) {
	for name, p := range scanCases {
		t.Run(name, func(t *testing.T) { checkScanner(t, []byte(p)) })
	}
}

// scanReaders read one value of each kind the scanner takes.
var scanReaders = map[string]func(*JSONScanner) (any, bool){
	"Uint":        func(s *JSONScanner) (any, bool) { var v uint64; ok := s.Uint(&v); return v, ok },
	"Int":         func(s *JSONScanner) (any, bool) { var v int64; ok := s.Int(&v); return v, ok },
	"Bool":        func(s *JSONScanner) (any, bool) { var v bool; ok := s.Bool(&v); return v, ok },
	"PlainString": func(s *JSONScanner) (any, bool) { var v []byte; ok := s.PlainString(&v); return string(v), ok },
	"Time":        func(s *JSONScanner) (any, bool) { var v time.Time; ok := s.Time(&v); return v, ok },
	"RawValue":    func(s *JSONScanner) (any, bool) { var v []byte; ok := s.RawValue(&v); return v, ok },
}

func TestJSONScannerTakes(t *testing.T) {
	for reader, in := range map[string]string{
		"Uint":        "18446744073709551615",
		"Int":         "-9223372036854775807",
		"Bool":        "false",
		"PlainString": `"é"`,
		"Time":        scanCases["time"],
		"RawValue":    scanCases["deep"],
	} {
		t.Run(reader, func(t *testing.T) {
			s := NewJSONScanner([]byte(in))
			if _, ok := scanReaders[reader](&s); !ok || !s.End() {
				t.Errorf("%s is not on the fast path", in)
			}
		})
	}
}

// checkScanner fails unless every reading of p that the scanner takes
// is json.Unmarshal's, and RawValue refuses all invalid JSON.
func checkScanner(t *testing.T, p []byte) {
	t.Helper()
	for name, read := range scanReaders {
		if name == "RawValue" {
			continue
		}
		s := NewJSONScanner(p)
		got, ok := read(&s)
		if !ok || !s.End() {
			continue
		}
		want := reflect.New(reflect.TypeOf(got))
		if err := json.Unmarshal(p, want.Interface()); err != nil {
			t.Fatalf("%s took %q, json.Unmarshal: %v", name, p, err)
		}
		if w := want.Elem().Interface(); !reflect.DeepEqual(got, w) {
			t.Fatalf("%s of %q: got %#v, want %#v", name, p, got, w)
		}
	}

	s := NewJSONScanner(p)
	var raw []byte
	ok := s.RawValue(&raw) && s.End()
	if ok != json.Valid(p) && (ok || len(p) <= maxDepth) {
		t.Fatalf("RawValue(%q) ok %v, json.Valid %v", p, ok, json.Valid(p))
	}
	if ok && !bytes.Equal(raw, bytes.TrimSpace(p)) {
		t.Fatalf("RawValue(%q) = %q", p, raw)
	}
}

// FuzzJSONScanner: what the scanner reads is what json.Unmarshal
// reads, RawValue agrees with json.Valid, and nothing panics.
func FuzzJSONScanner(f *testing.F) {
	for _, p := range scanCases {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, p []byte) { checkScanner(t, p) })
}
