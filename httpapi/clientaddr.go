package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
)

// Proxy headers: the one header a trusted proxy sets or appends to, as
// server.proxy_header names it.
const (
	ProxyHeaderXForwardedFor = "x-forwarded-for" // the default: nginx, HAProxy, Caddy, Traefik append to it
	ProxyHeaderForwarded     = "forwarded"       // RFC 7239, for proxies that append for= elements
	ProxyHeaderXRealIP       = "x-real-ip"       // one address, set (not appended) by the proxy
)

// clientAddr finds the client of a request. The peer of the connection is
// the client unless it is a trusted proxy; then the one header the proxy
// writes (header, one of the ProxyHeader constants) is walked from the
// right (the hop the trusted proxy added) to the left, skipping trusted
// hops, and the first untrusted address is the client. Any other
// forwarding header is ignored: a client can send its own, and a proxy
// that appends to X-Forwarded-For passes a forged Forwarded through
// unchanged.
//
// Hops that are not addresses ("unknown", obfuscated "_names", garbage)
// stop the walk: the client is then the nearest address known, the
// trusted hop that reported it. A Forwarded header that does not parse is
// ignored as a whole (the peer is the client). Untrusted peers' headers
// are never read.
func clientAddr(remoteAddr string, h http.Header, trusted []netip.Prefix, header string) netip.Addr {
	peer, ok := parseHop(remoteAddr)
	if !ok || !isTrusted(peer, trusted) {
		return peer
	}
	var hops []string
	switch header {
	case ProxyHeaderForwarded:
		if fw := h.Values("Forwarded"); len(fw) > 0 {
			hops, ok = forwardedFor(fw)
			if !ok {
				return peer
			}
		}
	case ProxyHeaderXRealIP:
		// Set, not appended: only the last value counts (a client's own
		// X-Real-IP comes before the proxy's when the proxy adds one).
		if v := h.Values("X-Real-Ip"); len(v) > 0 {
			hops = []string{v[len(v)-1]}
		}
	default:
		for _, v := range h.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(v, ",")...)
		}
	}
	cur := peer
	for i := len(hops) - 1; i >= 0; i-- {
		if !isTrusted(cur, trusted) {
			return cur
		}
		a, ok := parseHop(strings.TrimSpace(hops[i]))
		if !ok {
			return cur
		}
		cur = a
	}
	return cur
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads an address in any of the forms forwarding headers and
// RemoteAddr use: 192.0.2.1, 192.0.2.1:80, 2001:db8::1, [2001:db8::1],
// [2001:db8::1]:80. Zones are dropped and IPv4-mapped addresses unmapped.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return a.WithZone("").Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// forwardedFor returns the for= value of each element of the Forwarded
// header fields (RFC 7239 section 4), in order; an element without for=
// gives "". ok is false when the fields do not follow the grammar.
func forwardedFor(fields []string) (fors []string, ok bool) {
	s := strings.Join(fields, ",")
	i := 0
	skipOWS := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	for {
		// One forwarded-element: [pair] *( ";" [pair] ).
		forVal := ""
		for {
			skipOWS()
			if i < len(s) && s[i] != ';' && s[i] != ',' {
				start := i
				for i < len(s) && isTokenChar(s[i]) {
					i++
				}
				key := s[start:i]
				if key == "" || i >= len(s) || s[i] != '=' {
					return nil, false
				}
				i++
				var val string
				if i < len(s) && s[i] == '"' {
					var b strings.Builder
					i++
					closed := false
					for i < len(s) {
						c := s[i]
						if c == '\\' && i+1 < len(s) {
							b.WriteByte(s[i+1])
							i += 2
							continue
						}
						if c == '"' {
							closed = true
							i++
							break
						}
						b.WriteByte(c)
						i++
					}
					if !closed {
						return nil, false
					}
					val = b.String()
				} else {
					start := i
					for i < len(s) && isTokenChar(s[i]) {
						i++
					}
					val = s[start:i]
					if val == "" {
						return nil, false
					}
				}
				if strings.EqualFold(key, "for") {
					forVal = val
				}
				skipOWS()
			}
			if i < len(s) && s[i] == ';' {
				i++
				continue
			}
			break
		}
		fors = append(fors, forVal)
		if i >= len(s) {
			return fors, true
		}
		if s[i] != ',' {
			return nil, false
		}
		i++
	}
}

// isTokenChar reports whether c is a tchar of RFC 9110.
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
