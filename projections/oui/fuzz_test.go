package oui

import (
	"net"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add("001B63\tApple, Inc.\nC85CE20\tFela Management AG\n8C1F64001\tHYFIX\n")
	f.Add("001B63\tApple\n001B63\tApple\n")
	f.Add("001B63 Apple\n")
	f.Add("\n\t\n")
	f.Add("FFFFFFFFF\tx\nFFFFFFF\ty\nFFFFFF\tz")
	f.Add("001B63\tBURG-WÄCHTER KG\r\n")
	f.Fuzz(func(t *testing.T, data string) {
		r, err := Parse(strings.NewReader(data))
		if err != nil {
			if r != nil {
				t.Fatalf("Parse returned a registry with error %v", err)
			}
			return
		}
		// Every parsed prefix must be found again by Lookup.
		n := 0
		for _, ln := range strings.Split(data, "\n") {
			hex, name, ok := strings.Cut(ln, "\t")
			if !ok {
				continue
			}
			n++
			mac := make(net.HardwareAddr, 6)
			for i := 0; i < len(hex); i++ {
				d, _ := hexDigit(hex[i])
				mac[i/2] |= d << (4 * (1 - i%2))
			}
			got := r.Lookup(mac)
			if Random(mac) {
				if got != "" {
					t.Fatalf("locally administered %v resolved to %q", mac, got)
				}
				continue
			}
			// A longer prefix in the same data may win for this address.
			if got == "" || (len(hex) == 9 && got != name) {
				t.Fatalf("Lookup(%v) = %q, want %q (prefix %s)", mac, got, name, hex)
			}
		}
		if r.Len() != n {
			t.Fatalf("Len() = %d, want %d lines", r.Len(), n)
		}
	})
}
