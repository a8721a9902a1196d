package events

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CheckText says what is wrong with text a user gives (a label, a note, a
// token name), or "" when nothing is. It refuses invalid UTF-8, control
// characters (tab and line breaks too unless multiline), the bidirectional
// embedding, override and isolate characters (U+202A–U+202E,
// U+2066–U+2069), which make text display in another order than it is
// stored (a label that reads "printer" but sorts and searches as something
// else), and U+FFFD, which is what a lone UTF-16 surrogate in JSON
// ("\ud800") decodes to. Each answer says what to change.
func CheckText(s string, multiline bool) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8: send UTF-8 text"
	}
	for _, c := range s {
		switch {
		case multiline && (c == '\n' || c == '\r' || c == '\t'):
		case unicode.IsControl(c):
			return fmt.Sprintf("contains the control character %U: remove it", c)
		case c >= 0x202A && c <= 0x202E, c >= 0x2066 && c <= 0x2069:
			return fmt.Sprintf("contains the bidirectional control character %U, which shows text in another order than it is stored: remove it", c)
		case c == utf8.RuneError:
			return "contains U+FFFD, the replacement for an invalid character or a lone surrogate (\\ud800-\\udfff without its pair): send the intended character"
		}
	}
	return ""
}
