package inventory

import (
	"strings"
	"testing"
)

// An edit's summary quotes the text as a person reads it, never with Go
// escapes.
func TestQuoteText(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct{ in, want string }{
		{"Printer", `"Printer"`},
		{"", `""`},
		{"line one\nline two", `"line one line two"`},
		{"  tabs\tand\r\n  spaces  ", `"tabs and spaces"`},
		{"café ☕", `"café ☕"`},
		{"a \"quoted\" word", `"a "quoted" word"`},
		{"bell\x07", `"bell"`},
		{"bad \xff byte", "\"bad \uFFFD byte\""},
		{long, `"` + long[:60] + `…"`},
		{strings.Repeat("ab ", 30), `"` + strings.TrimSpace(strings.Repeat("ab ", 20)) + ` …"`},
	} {
		if got := quoteText(tc.in); got != tc.want {
			t.Errorf("quoteText(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
