package sources

import "testing"

func TestOutsideIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7": "203.0.113.7", " 203.0.113.7/24 ": "203.0.113.7", "100.64.0.9/10": "100.64.0.9",
		"": "", "garbage": "", "2001:db8::1": "", "::ffff:203.0.113.7": "", "0.0.0.0": "", "127.0.0.1": "",
		"224.0.0.1": "", "255.255.255.255": "", "203.0.113.007": "", "203.0.113.7/": "203.0.113.7",
	} {
		if got := OutsideIPv4(in); got != want {
			t.Errorf("OutsideIPv4(%q) = %q, want %q", in, got, want)
		}
	}
}
