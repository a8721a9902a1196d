package events

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	tests := []struct {
		name, in  string
		multiline bool
		want      string // a part of the answer; "" for none
	}{
		{"plain", "living room printer", false, ""},
		{"accents and emoji", "Küche 🖨", false, ""},
		{"newline in a note", "line 1\nline 2\ttab", true, ""},
		{"newline in a label", "a\nb", false, "control character U+000A"},
		{"NUL", "a\x00b", true, "control character U+0000"},
		{"escape", "a\x1b[31m", true, "control character U+001B"},
		{"right-to-left override", "abc\u202Egnp.exe", false, "bidirectional control character U+202E"},
		{"left-to-right embedding", "\u202Aabc", false, "U+202A"},
		{"first strong isolate", "a\u2068b", true, "U+2068"},
		{"pop directional isolate", "a\u2069", false, "U+2069"},
		{"lone surrogate as decoded", "a\uFFFDb", false, "lone surrogate"},
		{"invalid UTF-8", "a\xffb", false, "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckText(tc.in, tc.multiline)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("CheckText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
