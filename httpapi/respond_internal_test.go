package httpapi

import (
	"encoding/json"
	"testing"
)

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "eyJzIjoibmFtZSJ9", "a-b_c=.~", "<&>", "quote\"", "back\\slash", "tab\t", "\x00", "ü", "\u2028", "\xff"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("%q: got %s, want x%s", s, got, want)
		}
	}
}

// FuzzAppendJSONString: a cursor is always written as json.Marshal would.
func FuzzAppendJSONString(f *testing.F) {
	f.Add("eyJzIjoibmFtZSJ9")
	f.Add("<\"\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	})
}
