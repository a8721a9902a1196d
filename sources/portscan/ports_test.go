package portscan

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in   string
		want string // FormatPorts of the result
		n    int
	}{
		{"22", "22", 1},
		{"22,80,8000-8100", "22,80,8000-8100", 103},
		{" 443 , 22,80 ", "22,80,443", 3},
		{"1-65535", "1-65535", 65535},
		{"80,80,79-81", "79-81", 3},
		{"8000 - 8002", "8000-8002", 3},
		{"65535", "65535", 1},
		{"5-5", "5", 1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePorts(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if FormatPorts(got) != tt.want || len(got) != tt.n || !slices.IsSorted(got) {
				t.Errorf("ParsePorts(%q) = %s (%d ports), want %s (%d)", tt.in, FormatPorts(got), len(got), tt.want, tt.n)
			}
		})
	}
}

func TestParsePortsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty list: give ports and ranges such as 22,80,8000-8100"},
		{"  ", "empty list"},
		{"22,,80", `item 2 of "22,,80" is empty: remove the extra comma`},
		{"22,", `item 2 of "22," is empty`},
		{"0", "port 0 (item 1) is out of range: ports are 1-65535"},
		{"22,65536", "port 65536 (item 2) is out of range"},
		{"99999999999999999999", "is out of range"},
		{"8100-8000", `range "8100-8000" (item 1) runs backwards: write 8000-8100`},
		{"ssh", `"ssh" (item 1) is not a port or a range: want a number 1-65535 or low-high such as 8000-8100`},
		{"-5", `"-5" (item 1) is not a port or a range`},
		{"80-", `"80-" (item 1) is not a port or a range`},
		{"1-2-3", `"1-2-3" (item 1) is not a port or a range`},
		{"+80", `"+80" (item 1) is not a port`},
		{"0x50", `"0x50" (item 1) is not a port`},
		{"22;80", `"22;80" (item 1) is not a port`},
		{strings.Repeat("1,", maxSpecLen), "use ranges (1-65535 is every port)"},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 20 {
			name = name[:20]
		}
		t.Run(name, func(t *testing.T) {
			_, err := ParsePorts(tt.in)
			if !errors.Is(err, ErrBadPorts) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParsePorts(%q) error = %v, want ErrBadPorts with %q", name, err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "portscan: bad port list: ") {
				t.Errorf("error %q lacks the prefix", err)
			}
		})
	}
}

func TestPorts(t *testing.T) {
	got, err := Ports("")
	if err != nil || !slices.Equal(got, Preset) {
		t.Fatalf("Ports(\"\") = %v, %v", got, err)
	}
	got[0] = 1 // a copy: Preset stays
	if Preset[0] != 7 {
		t.Error("Ports returned Preset itself")
	}
	if got, err := Ports("22"); err != nil || !slices.Equal(got, []uint16{22}) {
		t.Errorf("Ports(22) = %v, %v", got, err)
	}
	if _, err := Ports("x"); !errors.Is(err, ErrBadPorts) {
		t.Errorf("Ports(x) = %v", err)
	}
	if len(Preset) != 100 || !slices.IsSorted(Preset) || slices.Contains(Preset, 0) {
		t.Errorf("Preset: %d ports, sorted %v", len(Preset), slices.IsSorted(Preset))
	}
}

func TestFormatPorts(t *testing.T) {
	for _, tt := range []struct {
		in   []uint16
		want string
	}{
		{nil, ""},
		{[]uint16{80}, "80"},
		{[]uint16{81, 80, 22, 80, 8000, 8001, 8002, 443}, "22,80-81,443,8000-8002"},
		{[]uint16{1, 65535}, "1,65535"},
	} {
		if got := FormatPorts(tt.in); got != tt.want {
			t.Errorf("FormatPorts(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPresetMatchesNmapServices regenerates the preset from nmap's
// frequency table: the 100 TCP ports with the highest open-frequency.
func TestPresetMatchesNmapServices(t *testing.T) {
	const path = "/usr/share/nmap/nmap-services"
	f, err := os.Open(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (install nmap)", err)
		}
		t.Skipf("SKIPPING: %v (install nmap to check the preset)", err)
	}
	defer f.Close()
	type svc struct {
		port uint16
		freq float64
	}
	var all []svc
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || strings.HasPrefix(fields[0], "#") || !strings.HasSuffix(fields[1], "/tcp") {
			continue
		}
		port, err1 := strconv.Atoi(strings.TrimSuffix(fields[1], "/tcp"))
		freq, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		all = append(all, svc{uint16(port), freq})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].freq > all[j].freq })
	var top []uint16
	for _, s := range all[:100] {
		top = append(top, s.port)
	}
	slices.Sort(top)
	if !slices.Equal(top, Preset) {
		t.Errorf("nmap's top 100 TCP ports differ from Preset:\n got  %s\n want %s", FormatPorts(top), FormatPorts(Preset))
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"22", "22,80,8000-8100", "1-65535", " 1 , 2-3 ", "8100-8000", "22,,80", "-", "0", "65536", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := ParsePorts(s)
		if err != nil {
			if !errors.Is(err, ErrBadPorts) {
				t.Fatalf("error without ErrBadPorts: %v", err)
			}
			return
		}
		if len(ports) == 0 || !slices.IsSorted(ports) || slices.Contains(ports, 0) || len(slices.Compact(slices.Clone(ports))) != len(ports) {
			t.Fatalf("ParsePorts(%q) = %v", s, ports)
		}
		again, err := ParsePorts(FormatPorts(ports))
		if err != nil || !slices.Equal(again, ports) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
