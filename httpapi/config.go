package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Default rate limits. Every limit is a token bucket: Rate requests per
// second refill it and Burst is its size.
const (
	// DefaultTokenRate and DefaultTokenBurst limit each API token.
	DefaultTokenRate  rate.Limit = 5000
	DefaultTokenBurst int        = 10000
	// DefaultClientRate and DefaultClientBurst limit each client address
	// (an IPv6 client counts by its /64), across every path.
	DefaultClientRate  rate.Limit = 20000
	DefaultClientBurst int        = 40000
	// DefaultFailedAuthBurst failed token checks are allowed per client
	// address, refilled at DefaultFailedAuthRate (20 per minute). Past
	// them, requests carrying a token get 429 until the bucket refills.
	DefaultFailedAuthRate  rate.Limit = 20.0 / 60.0
	DefaultFailedAuthBurst int        = 20
	// DefaultWriteRate and DefaultWriteBurst limit each token's writes
	// (PATCH), on top of its request limit: a person edits a few devices
	// a second at most, and each write is an event kept for good.
	DefaultWriteRate  rate.Limit = 10
	DefaultWriteBurst int        = 50
)

// Config is the server.* part of the configuration that the API server
// uses. The zero value is valid and means the defaults.
type Config struct {
	// TrustedProxies (server.trusted_proxies): reverse proxies whose
	// X-Forwarded-For or Forwarded headers identify the client. A single
	// address is a /32 or /128 prefix. Default empty: the client address
	// is the connection's peer.
	TrustedProxies []netip.Prefix
	// AllowedHosts are the host names (or addresses) this server answers
	// to, as the Host header gives them (a port is ignored). Empty: any
	// Host. The web interface's cookie sessions set it (the names the
	// admin reaches the server by) so that a DNS-rebinding page cannot
	// speak to the server as its own origin; other requests get 421.
	AllowedHosts []string
	// ProxyHeader (server.proxy_header): the one header the trusted
	// proxies write the client's address to: ProxyHeaderXForwardedFor
	// (default), ProxyHeaderForwarded or ProxyHeaderXRealIP. Every other
	// forwarding header is ignored.
	ProxyHeader string
	// CORSOrigins (server.cors.allowed_origins): browser origins, as
	// scheme://host[:port], that may read /api. Default empty: no CORS
	// headers are ever sent.
	CORSOrigins []string
	// MCPEnabled (server.mcp.enabled) mounts MCP at /mcp. Default false:
	// /mcp answers 404.
	MCPEnabled bool
	// MCP is the MCP endpoint, mounted at /mcp behind token
	// authentication when MCPEnabled. nil answers 404 anyway.
	MCP http.Handler
	// Metrics serves /metrics (the Prometheus text format) behind a read
	// token. nil: /metrics is a path like any other.
	Metrics http.Handler
	// ObserveRequest, when set, is told of every request once answered:
	// its route ("/api/devices/{id}", "/metrics", "/mcp", "ui", or
	// "unmatched"), its status and how long it took.
	ObserveRequest func(route string, status int, took time.Duration)
	// UI serves every path outside /api and /mcp. nil answers 404
	// problems there.
	UI http.Handler

	// TokenRate and TokenBurst limit each API token (0 = defaults).
	TokenRate  rate.Limit
	TokenBurst int
	// ClientRate and ClientBurst limit each client address (0 = defaults).
	ClientRate  rate.Limit
	ClientBurst int
	// FailedAuthRate and FailedAuthBurst limit failed token checks per
	// client address (0 = defaults).
	FailedAuthRate  rate.Limit
	FailedAuthBurst int
	// WriteRate and WriteBurst limit each token's writes (0 = defaults).
	WriteRate  rate.Limit
	WriteBurst int
}

func (c *Config) setDefaults() {
	if c.TokenRate == 0 {
		c.TokenRate = DefaultTokenRate
	}
	if c.TokenBurst == 0 {
		c.TokenBurst = DefaultTokenBurst
	}
	if c.ClientRate == 0 {
		c.ClientRate = DefaultClientRate
	}
	if c.ClientBurst == 0 {
		c.ClientBurst = DefaultClientBurst
	}
	if c.FailedAuthRate == 0 {
		c.FailedAuthRate = DefaultFailedAuthRate
	}
	if c.FailedAuthBurst == 0 {
		c.FailedAuthBurst = DefaultFailedAuthBurst
	}
	if c.WriteRate == 0 {
		c.WriteRate = DefaultWriteRate
	}
	if c.WriteBurst == 0 {
		c.WriteBurst = DefaultWriteBurst
	}
	if c.ProxyHeader == "" {
		c.ProxyHeader = ProxyHeaderXForwardedFor
	}
}

// Validate checks the configuration. Errors wrap ErrConfig and name the
// setting.
func (c Config) Validate() error {
	for i, p := range c.TrustedProxies {
		if !p.IsValid() {
			return configError(fmt.Sprintf("server.trusted_proxies[%d]", i), "not a valid prefix: want an address or CIDR prefix, e.g. 10.0.0.1 or 10.0.0.0/8")
		}
	}
	switch c.ProxyHeader {
	case "", ProxyHeaderXForwardedFor, ProxyHeaderForwarded, ProxyHeaderXRealIP:
	default:
		return configError("server.proxy_header", "%q is not a proxy header: want x-forwarded-for, forwarded or x-real-ip", c.ProxyHeader)
	}
	for i, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			return configError(fmt.Sprintf("server.cors.allowed_origins[%d]", i), "%q %s", o, err.Error())
		}
	}
	limits := []struct {
		key   string
		rate  rate.Limit
		burst int
	}{
		{"token rate limit", c.TokenRate, c.TokenBurst},
		{"client rate limit", c.ClientRate, c.ClientBurst},
		{"failed authentication limit", c.FailedAuthRate, c.FailedAuthBurst},
		{"write rate limit", c.WriteRate, c.WriteBurst},
	}
	for _, l := range limits {
		if l.rate < 0 || l.burst < 0 {
			return configError(l.key, "rate and burst must not be negative")
		}
	}
	return nil
}

// checkOrigin accepts an origin exactly as a browser sends it in the
// Origin header: lower-case http or https scheme, a host, an optional
// port, nothing else.
func checkOrigin(o string) error {
	const want = "want scheme://host[:port], e.g. https://dash.example.com or http://192.168.1.5:3000"
	u, err := url.Parse(o)
	if err != nil {
		return fmt.Errorf("is not an origin: %s", want)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("needs the scheme http or https: %s", want)
	}
	if u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
		return fmt.Errorf("must have a host and no user, path (not even a trailing /), query or fragment: %s", want)
	}
	if o != strings.ToLower(o) {
		return fmt.Errorf("must be lower case, as browsers send it: %s", want)
	}
	if strings.Contains(u.Host, "*") {
		return fmt.Errorf("must not contain a wildcard: list each origin: %s", want)
	}
	return nil
}

// ParseTrustedProxies turns the server.trusted_proxies setting (addresses
// or CIDR prefixes) into prefixes; a single address becomes a /32 or /128.
// Errors wrap ErrConfig and name the entry.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		key := fmt.Sprintf("server.trusted_proxies[%d]", i)
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, configError(key, "%q is not a CIDR prefix: want e.g. 10.0.0.0/8 or fd00::/8", s)
			}
			if p.Addr().Zone() != "" {
				return nil, configError(key, "%q must not have a zone", s)
			}
			if p.Addr().Is4In6() {
				if p.Bits() < 96 {
					return nil, configError(key, "%q mixes IPv4-mapped and IPv6 addresses: write the IPv4 prefix instead", s)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, configError(key, "%q is not an IP address: want e.g. 10.0.0.1 or a CIDR prefix", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// limiterIdle is how long an unused rate-limit bucket is kept.
const limiterIdle = 10 * time.Minute
