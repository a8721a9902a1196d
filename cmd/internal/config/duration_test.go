package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
		str  string
	}{
		{"90s", 90 * time.Second, "90s"},
		{"15m", 15 * time.Minute, "15m"},
		{"720h", 720 * time.Hour, "720h"},
		{"0s", 0, "0s"},
		{"0h", 0, "0s"},
		{"60s", time.Minute, "1m"},
		{"120m", 2 * time.Hour, "2h"},
		{"999999999s", 999999999 * time.Second, "999999999s"},
		{"2562047h", 2562047 * time.Hour, "2562047h"},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDuration(tt.in)
			if err != nil {
				t.Fatalf("ParseDuration(%q) = %v", tt.in, err)
			}
			if d.D() != tt.want {
				t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, d.D(), tt.want)
			}
			if d.String() != tt.str {
				t.Errorf("String() = %q, want %q", d.String(), tt.str)
			}
			var u Duration
			if err := u.UnmarshalText([]byte(d.String())); err != nil || u != d {
				t.Errorf("round trip through %q gave %v, %v", d.String(), u, err)
			}
		})
	}
	bad := []struct{ in, hint string }{
		{"1.5h", "write it with one unit: 90m"},
		{"300ms", "the smallest unit is s"},
		{"1h30m", "write it with one unit: 90m"},
		{"-5m", "cannot be negative"},
		{"90", "add a unit, e.g. 90s"},
		{"2d", "there is no day unit, write 48h"},
		{"", `got ""`},
		{"s", `got "s"`},
		{" 5m", "remove the spaces"},
		{"5M", `got "5M"`},
		{"1000000000s", "at most 9 digits"},
		{"999999999h", "too long"},
		{"+5m", `got "+5m"`},
		{"5m ", "remove the spaces"},
		{"１s", `got "１s"`},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.in, func(t *testing.T) {
			_, err := ParseDuration(tt.in)
			if err == nil {
				t.Fatalf("ParseDuration(%q) accepted", tt.in)
			}
			msg := err.Error()
			if !strings.Contains(msg, "want a whole number followed by s, m or h") || !strings.Contains(msg, tt.hint) {
				t.Errorf("ParseDuration(%q) = %q, want the form and %q", tt.in, msg, tt.hint)
			}
		})
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{45 * time.Second, "45s"},
		{90 * time.Minute, "90m"},
		{1500 * time.Millisecond, "1.5s"},
		{-time.Minute, "-1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Duration(tt.d).String(); got != tt.want {
				t.Errorf("Duration(%v).String() = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

// TestDurationsInFile checks the duration rules through the loader, with
// the error at the value's line and column.
func TestDurationsInFile(t *testing.T) {
	for _, in := range []string{"1.5h", "300ms", "1h30m", "-5m", "90"} {
		t.Run(in, func(t *testing.T) {
			p := findProblem(t, problems(t, "inventory:\n  online_window: "+in+"\n"), "inventory.online_window")
			if p.Line != 2 || p.Column != 18 {
				t.Errorf("position %d:%d, want 2:18", p.Line, p.Column)
			}
		})
	}
	for _, in := range []string{"90s", "15m", "720h", "0s", `"15m"`} {
		t.Run(in, func(t *testing.T) {
			mustLoad(t, "retention:\n  history: "+in+"\n")
		})
	}
	p := findProblem(t, problems(t, "inventory:\n  online_window: 0s\n"), "inventory.online_window")
	if !strings.Contains(p.Msg, "above 0s") {
		t.Errorf("online_window 0s: %q", p.Msg)
	}
}
