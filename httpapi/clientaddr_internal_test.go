package httpapi

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"
)

func TestForwardedFor(t *testing.T) {
	tests := []struct {
		fields []string
		want   []string
		ok     bool
	}{
		{[]string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, []string{"192.0.2.60"}, true},
		{[]string{`For="[2001:db8:cafe::17]:4711"`}, []string{"[2001:db8:cafe::17]:4711"}, true},
		{[]string{`for=192.0.2.43, for=198.51.100.17`}, []string{"192.0.2.43", "198.51.100.17"}, true},
		{[]string{`for=192.0.2.43`, `for=198.51.100.17;by=x`}, []string{"192.0.2.43", "198.51.100.17"}, true},
		{[]string{`proto=https`}, []string{""}, true},
		{[]string{`for=unknown`}, []string{"unknown"}, true},
		{[]string{`for="a\"b"`}, []string{`a"b`}, true},
		{[]string{`for = 1.2.3.4`}, nil, false},
		{[]string{`for="1.2.3.4`}, nil, false},
		{[]string{`for=[2001:db8::1]`}, nil, false}, // IPv6 must be quoted
		{[]string{`for=`}, nil, false},
		{[]string{`=1.2.3.4`}, nil, false},
		{[]string{`for=1.2.3.4 x`}, nil, false},
		{[]string{``}, []string{""}, true},
	}
	for _, tc := range tests {
		t.Run(tc.fields[0], func(t *testing.T) {
			got, ok := forwardedFor(tc.fields)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Fatalf("forwardedFor(%q) = %q, %v; want %q, %v", tc.fields, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseHop(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1": "192.0.2.1", "192.0.2.1:80": "192.0.2.1", "2001:db8::1": "2001:db8::1",
		"[2001:db8::1]": "2001:db8::1", "[2001:db8::1]:80": "2001:db8::1", "::ffff:192.0.2.1": "192.0.2.1",
		"fe80::1%eth0": "fe80::1", "[192.0.2.1]": "", "unknown": "", "_hidden": "", "": "",
	} {
		a, ok := parseHop(in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != want {
			t.Errorf("parseHop(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzClientAddr: any forwarding headers give either the peer or an
// address that appears in them, and never panic.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.1:1", "for=192.0.2.1", "198.51.100.1, 10.0.0.2")
	f.Add("10.0.0.1:1", `for="[2001:db8::1]:80";by=x, for=unknown`, "")
	f.Add("192.0.2.9:1", "", "1.2.3.4")
	f.Add("[fd00::1]:1", `for="\"`, "::ffff:1.2.3.4,,")
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	f.Fuzz(func(t *testing.T, peer, fwd, xff string) {
		h := http.Header{}
		if fwd != "" {
			h.Set("Forwarded", fwd)
		}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		for _, header := range []string{ProxyHeaderXForwardedFor, ProxyHeaderForwarded, ProxyHeaderXRealIP} {
			got := clientAddr(peer, h, trusted, header)
			p, ok := parseHop(peer)
			if !ok {
				if got.IsValid() {
					t.Fatalf("unparsable peer %q gave %s", peer, got)
				}
				return
			}
			if !isTrusted(p, trusted) && got != p {
				t.Fatalf("untrusted peer %s: client %s", p, got)
			}
			if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
				t.Fatalf("client %v from %q %q %q (%s)", got, peer, fwd, xff, header)
			}
		}
	})
}

// FuzzForwarded: the parser never panics and what it accepts has one
// entry per element.
func FuzzForwarded(f *testing.F) {
	for _, s := range []string{`for=192.0.2.60;proto=http;by=203.0.113.43`, `for="[::1]:80", for=x`, `a=b;c="d\"e"`, `,`, `for="`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fors, ok := forwardedFor([]string{s})
		if ok && len(fors) == 0 {
			t.Fatalf("accepted %q with no element", s)
		}
	})
}
