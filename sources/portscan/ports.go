package portscan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Preset is the port list used when scan.ports.custom is empty: the 100
// most frequently open TCP ports according to nmap's frequency data
// (/usr/share/nmap/nmap-services of Debian's nmap 7.93, the same list as
// `nmap --top-ports 100`). README.md says how to regenerate it;
// TestPresetMatchesNmapServices checks it against that file when present.
var Preset = []uint16{
	7, 9, 13, 21, 22, 23, 25, 26, 37, 53, 79, 80, 81, 88, 106, 110, 111, 113, 119, 135,
	139, 143, 144, 179, 199, 389, 427, 443, 444, 445, 465, 513, 514, 515, 543, 544, 548, 554, 587, 631,
	646, 873, 990, 993, 995, 1025, 1026, 1027, 1028, 1029, 1110, 1433, 1720, 1723, 1755, 1900, 2000, 2001, 2049, 2121,
	2717, 3000, 3128, 3306, 3389, 3986, 4899, 5000, 5009, 5051, 5060, 5101, 5190, 5357, 5432, 5631, 5666, 5800, 5900, 6000,
	6001, 6646, 7070, 8000, 8008, 8009, 8080, 8081, 8443, 8888, 9100, 9999, 10000, 32768, 49152, 49153, 49154, 49155, 49156, 49157,
}

// maxSpecLen bounds the text ParsePorts accepts (every port listed one by
// one is under 400 KB).
const maxSpecLen = 1 << 19

// Ports returns the ports of scan.ports.custom: Preset when custom is
// empty (or blank), otherwise ParsePorts(custom).
func Ports(custom string) ([]uint16, error) {
	if strings.TrimSpace(custom) == "" {
		return slices.Clone(Preset), nil
	}
	return ParsePorts(custom)
}

// ParsePorts parses a comma-separated list of ports and low-high ranges,
// such as "22,80,8000-8100" or "1-65535", into sorted, distinct ports.
// Spaces around items are allowed; overlapping items are merged. Errors
// wrap [ErrBadPorts] and name the item, its position and the fix.
func ParsePorts(s string) ([]uint16, error) {
	if len(s) > maxSpecLen {
		return nil, fmt.Errorf("%w: the list is %d bytes long; use ranges (1-65535 is every port)", ErrBadPorts, len(s))
	}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty list: give ports and ranges such as 22,80,8000-8100", ErrBadPorts)
	}
	var set [65536 / 64]uint64
	items := strings.Split(s, ",")
	for i, raw := range items {
		item := strings.TrimSpace(raw)
		pos := i + 1
		if item == "" {
			return nil, fmt.Errorf("%w: item %d of %q is empty: remove the extra comma", ErrBadPorts, pos, s)
		}
		lowS, highS, isRange := strings.Cut(item, "-")
		low, err := parsePort(strings.TrimSpace(lowS), item, pos)
		if err != nil {
			return nil, err
		}
		high := low
		if isRange {
			if high, err = parsePort(strings.TrimSpace(highS), item, pos); err != nil {
				return nil, err
			}
			if high < low {
				return nil, fmt.Errorf("%w: range %q (item %d) runs backwards: write %d-%d", ErrBadPorts, item, pos, high, low)
			}
		}
		for p := int(low); p <= int(high); p++ {
			set[p/64] |= 1 << (p % 64)
		}
	}
	var out []uint16
	for p := 1; p < 65536; p++ {
		if set[p/64]&(1<<(p%64)) != 0 {
			out = append(out, uint16(p))
		}
	}
	return out, nil
}

func parsePort(s, item string, pos int) (uint16, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: %q (item %d) is not a port or a range: want a number 1-65535 or low-high such as 8000-8100", ErrBadPorts, item, pos)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q (item %d) is not a port or a range: want a number 1-65535 or low-high such as 8000-8100", ErrBadPorts, item, pos)
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%w: port %s (item %d) is out of range: ports are 1-65535", ErrBadPorts, s, pos)
	}
	return uint16(n), nil
}

// FormatPorts writes ports in the shortest range form ("22,80,8000-8100");
// the input need not be sorted or distinct.
func FormatPorts(ports []uint16) string {
	ps := slices.Clone(ports)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(ps[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ps[j])))
		}
		i = j + 1
	}
	return b.String()
}
