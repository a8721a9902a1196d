package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PortRange is an inclusive range of TCP ports; a single port has Low == High.
type PortRange struct {
	Low, High uint16
}

// Count is the number of ports in r.
func (r PortRange) Count() int { return int(r.High) - int(r.Low) + 1 }

// Contains reports whether port is in r.
func (r PortRange) Contains(port uint16) bool { return port >= r.Low && port <= r.High }

const portsForm = "want ports and ranges separated by commas, ranges as low-high, ports 1 to 65535 (e.g. 22,80,8000-8100; 1-65535 for every port)"

// ParsePorts parses scan.ports.custom: ports and low-high ranges separated by
// commas, spaces around items allowed ("22, 80,8000-8100"; "1-65535" is
// every port). The result is sorted with overlapping and adjacent ranges
// merged. The error names the item and says what to change.
func ParsePorts(s string) ([]PortRange, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%s, got nothing", portsForm)
	}
	var out []PortRange
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		n := i + 1
		if item == "" {
			return nil, fmt.Errorf("%s; item %d is empty, remove the extra comma", portsForm, n)
		}
		lo, hi, isRange := strings.Cut(item, "-")
		low, err := parsePort(strings.TrimSpace(lo))
		if err != "" {
			return nil, fmt.Errorf("%s; item %d %q: %s", portsForm, n, item, err)
		}
		high := low
		if isRange {
			if high, err = parsePort(strings.TrimSpace(hi)); err != "" {
				return nil, fmt.Errorf("%s; item %d %q: %s", portsForm, n, item, err)
			}
			if low > high {
				return nil, fmt.Errorf("%s; item %d %q: the range runs backwards, write %d-%d", portsForm, n, item, high, low)
			}
		}
		out = append(out, PortRange{Low: low, High: high})
	}
	slices.SortFunc(out, func(a, b PortRange) int { return cmp.Compare(a.Low, b.Low) })
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if int(r.Low) <= int(last.High)+1 {
			last.High = max(last.High, r.High)
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

func parsePort(s string) (uint16, string) {
	if !allDigits(s) {
		if s == "" {
			return 0, "a port is missing"
		}
		return 0, fmt.Sprintf("%q is not a port number", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 65535 {
		return 0, fmt.Sprintf("%s is above 65535", s)
	}
	if n == 0 {
		return 0, "port 0 does not exist, the lowest port is 1"
	}
	return uint16(n), ""
}
