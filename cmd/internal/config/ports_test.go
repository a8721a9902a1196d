package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePorts(t *testing.T) {
	good := []struct {
		in   string
		want []PortRange
	}{
		{"22", []PortRange{{22, 22}}},
		{"22,80,8000-8100", []PortRange{{22, 22}, {80, 80}, {8000, 8100}}},
		{"1-65535", []PortRange{{1, 65535}}},
		{" 443 , 80 ", []PortRange{{80, 80}, {443, 443}}},
		{"80,81,82-90,85", []PortRange{{80, 90}}},
		{"10-20,15-30,31", []PortRange{{10, 31}}},
		{"65535,1", []PortRange{{1, 1}, {65535, 65535}}},
		{"22-22", []PortRange{{22, 22}}},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePorts(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	bad := []struct{ in, msg string }{
		{"", "got nothing"},
		{"0", "port 0 does not exist"},
		{"65536", "65536 is above 65535"},
		{"99999999999999999999", "above 65535"},
		{"80-22", "runs backwards, write 22-80"},
		{"22,,80", "item 2 is empty"},
		{"22,", "item 2 is empty"},
		{"http", `"http" is not a port number`},
		{"-5", "a port is missing"},
		{"5-", "a port is missing"},
		{"1-2-3", `"2-3" is not a port number`},
		{"+80", `"+80" is not a port number`},
		{"22 80", `"22 80" is not a port number`},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.in, func(t *testing.T) {
			_, err := ParsePorts(tt.in)
			if err == nil {
				t.Fatalf("ParsePorts(%q) accepted", tt.in)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "e.g. 22,80,8000-8100") {
				t.Errorf("ParsePorts(%q) = %q, want %q and the form", tt.in, err, tt.msg)
			}
		})
	}
	r := PortRange{10, 20}
	if r.Count() != 11 || !r.Contains(10) || !r.Contains(20) || r.Contains(21) {
		t.Errorf("PortRange helpers wrong for %v", r)
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"22,80,8000-8100", "1-65535", "", "0", "80-22", ",", "1-2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParsePorts(s)
		if err != nil {
			return
		}
		for i, r := range rs {
			if r.Low == 0 || r.Low > r.High {
				t.Fatalf("ParsePorts(%q) gave %v", s, r)
			}
			if i > 0 && int(rs[i-1].High)+1 >= int(r.Low) {
				t.Fatalf("ParsePorts(%q) not merged: %v", s, rs)
			}
		}
	})
}
