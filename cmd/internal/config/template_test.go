package config

import (
	"errors"
	"strings"
	"testing"
)

func TestTemplateErrorPos(t *testing.T) {
	tests := []struct {
		body      string
		line, col int
		msg       string
	}{
		{"{{.Kind", 1, 1, "unclosed action"},
		{"a\n{{foo .X}}", 2, 1, `function "foo" not defined`},
		{"ok {{.X}} {{end}}", 1, 11, "unexpected {{end}}"},
		{"{{.X}}\n\n  {{ .Y }} {{ \"open }}", 3, 12, "unterminated quoted string"},
		{"{{if .X}}x", 1, 1, "unexpected EOF"}, // the unclosed if
		{"{{json .X}} {{ range }}", 1, 13, "missing value for range"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			_, err := BodyTemplate(tt.body)
			if err == nil {
				t.Fatal("parsed")
			}
			line, col, msg := templateErrorPos(tt.body, err)
			if line != tt.line || col != tt.col || msg != tt.msg {
				t.Errorf("got %d:%d %q, want %d:%d %q", line, col, msg, tt.line, tt.col, tt.msg)
			}
		})
	}
	if l, c, m := templateErrorPos("x", errors.New("other")); l != 0 || c != 0 || m != "other" {
		t.Errorf("unexpected error form: %d %d %q", l, c, m)
	}
	long := strings.Repeat("{{.X}}", 1000) + "{{"
	if _, err := BodyTemplate(long); err != nil {
		if l, _, _ := templateErrorPos(long, err); l != 1 {
			t.Errorf("line %d", l)
		}
	}
}
