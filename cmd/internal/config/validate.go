package config

import (
	"cmp"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	_ "time/tzdata" // location.timezone is checked with time.LoadLocation, also on hosts and images without zoneinfo

	"github.com/jocasta/jocasta/projections/notify/webhook"
)

// Bounds of the whole numbers. The contract says "whole number" for rate,
// rounds and concurrency; the upper bounds are ours and keep values in a
// range the sweep and the scanner can honour.
const (
	maxRate        = 1_000_000
	maxRounds      = 100
	maxConcurrency = 65535
	maxPriority    = 5
	// maxNetworkBits is the size cap of a swept network: at most 2^24
	// addresses (an IPv4 /8 or an IPv6 /104). An IPv6 /64 cannot be swept.
	maxNetworkBits = 24
	maxNameLen     = 63
	maxSourceLen   = 128
)

// validate checks the values (after file and environment) and fills the
// defaults that depend on other keys (plugin ports). Keys with a decode
// problem are skipped.
func (l *loader) validate(c *Config) {
	l.validateServer(&c.Server)
	l.validateDB(&c.DB)
	l.validateLogger(&c.Logger)
	l.positive("inventory.online_window", c.Inventory.OnlineWindow)
	l.notNegative("inventory.address_grace", c.Inventory.AddressGrace)
	l.notNegative("retention.history", c.Retention.History)
	l.notNegative("retention.traffic", c.Retention.Traffic)
	l.notNegative("retention.dns", c.Retention.DNS)
	l.notNegative("retention.devices", c.Retention.Devices)
	l.validateLocation(&c.Location)
	l.validateNetworks(c.Networks)
	l.validateScan(&c.Scan)
	l.validatePlugins(&c.Plugins)
	l.validateNotify(c.Notify)
	l.validateSensors(c)
}

// check records msg at path unless ok or path already has a problem.
func (l *loader) check(path string, ok bool, msg string) bool {
	if ok || l.bad[path] {
		return ok
	}
	l.problem(path, msg)
	return false
}

func (l *loader) warn(path, msg string) {
	p := Problem{Key: path, Msg: msg}
	if o, ok := l.where(path); ok {
		if o.env != "" {
			p.Env = o.env
		} else {
			p.File, p.Line, p.Column = l.file, o.line, o.col
		}
	}
	l.warnings = append(l.warnings, p.String())
}

// isSet reports whether the file or the environment set path.
func (l *loader) isSet(path string) bool {
	_, ok := l.origins[path]
	return ok
}

func (l *loader) positive(path string, d Duration) {
	l.check(path, d > 0, fmt.Sprintf("want a duration above 0s such as %s, got %s", sampleDuration(path), d))
}

func (l *loader) notNegative(path string, d Duration) {
	l.check(path, d >= 0, fmt.Sprintf("want 0s or more, got %s", d))
}

func sampleDuration(path string) string {
	switch {
	case strings.HasSuffix(path, "timeout") && !strings.Contains(path, "auth"):
		return "10s"
	case strings.HasPrefix(path, "server.auth"):
		return "24h"
	default:
		return "15m"
	}
}

func (l *loader) intRange(path string, n, lo, hi int) bool {
	return l.check(path, n >= lo && n <= hi, fmt.Sprintf("want a whole number from %d to %d, got %d", lo, hi, n))
}

func (l *loader) validateServer(s *Server) {
	l.host("server.host", s.Host, "server.port")
	l.intRange("server.port", s.Port, 1, 65535)
	ph := strings.ToLower(strings.TrimSpace(s.ProxyHeader))
	if l.check("server.proxy_header", ph == "x-forwarded-for" || ph == "forwarded" || ph == "x-real-ip",
		fmt.Sprintf("%q is not a proxy header: write x-forwarded-for (nginx, HAProxy, Caddy, Traefik), forwarded (RFC 7239) or x-real-ip", s.ProxyHeader)) {
		s.ProxyHeader = ph
	}
	if s.BaseURL != "" {
		u, err := url.Parse(s.BaseURL)
		ok := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
			(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == ""
		msg := fmt.Sprintf("%q is not a base URL: write scheme and host only, such as https://jocasta.lan", s.BaseURL)
		if err != nil || u.User != nil {
			msg = "not a base URL: write scheme and host only, such as https://jocasta.lan, with no user or password (the value is not shown: it may hold one)"
		}
		if l.check("server.base_url", ok, msg) {
			s.BaseURL = strings.TrimSuffix(s.BaseURL, "/")
		}
	}
	for i, p := range s.TrustedProxies {
		path := fmt.Sprintf("server.trusted_proxies[%d]", i)
		l.check(path, p == p.Masked(), fmt.Sprintf("%s has bits set after the prefix length; write %s (or the single address %s)", p, p.Masked(), p.Addr()))
	}
	for i, o := range s.CORS.AllowedOrigins {
		path := fmt.Sprintf("server.cors.allowed_origins[%d]", i)
		norm, msg := normalizeOrigin(o)
		if l.check(path, msg == "", msg) {
			s.CORS.AllowedOrigins[i] = norm
		}
	}
	l.positive("server.auth.session_lifetime", s.Auth.SessionLifetime)
	l.positive("server.auth.idle_timeout", s.Auth.IdleTimeout)
}

// host checks an address or host name without a port.
func (l *loader) host(path, h, portKey string) {
	msg := hostProblem(h, portKey)
	l.check(path, msg == "", msg)
}

func hostProblem(h, portKey string) string {
	switch {
	case h == "":
		return "want an address or host name such as 192.168.1.1 or router.lan, got nothing"
	case strings.Contains(h, "://"):
		return fmt.Sprintf("want a host name or address without a scheme, got %q; remove %q", h, h[:strings.Index(h, "://")+3])
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]"):
		return fmt.Sprintf("write the IPv6 address without brackets: %s", strings.Trim(h, "[]"))
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return ""
	}
	if hp, err := netip.ParseAddrPort(h); err == nil {
		return fmt.Sprintf("want a host without a port, got %q; write %s here and set %s to %d", h, hp.Addr(), portKey, hp.Port())
	}
	if name, port, ok := strings.Cut(h, ":"); ok && isHostName(name) {
		return fmt.Sprintf("want a host without a port, got %q; write %s here and set %s to %s", h, name, portKey, port)
	}
	if !isHostName(h) {
		return fmt.Sprintf("want an IP address or a host name (letters, digits, '-' and '.'), got %q", h)
	}
	return ""
}

// isHostName accepts DNS names: dot-separated labels of letters, digits, '-'
// and '_', 1-63 characters each, not starting or ending with '-'; at most 253
// characters; an optional final dot.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			ch := label[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
				return false
			}
		}
	}
	return true
}

// normalizeOrigin checks a browser origin and gives it in the form browsers
// send: lower-case scheme and host, no default port, no path.
func normalizeOrigin(o string) (string, string) {
	const form = "want an origin as scheme://host[:port], e.g. https://dash.example.com"
	if o == "*" {
		return "", form + `, got "*"; list each origin that may read /api`
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fmt.Sprintf("%s, got %q", form, o)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Sprintf("%s with scheme http or https, got %q", form, o)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", fmt.Sprintf("%s, got %q; remove everything after the host and port", form, o)
	}
	if u.Path == "/" {
		return "", fmt.Sprintf("%s, got %q; remove the trailing /", form, o)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Sprintf("%s, got %q; the port must be 1 to 65535", form, o)
		}
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, ""
}

func (l *loader) validateDB(d *DB) {
	l.check("db.path", d.Path != "" && !strings.ContainsRune(d.Path, 0), `want a directory such as . or /data, got nothing`)
	name := d.Name
	l.check("db.name", name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00"),
		fmt.Sprintf("want a file name without a directory, such as jocasta.db, got %q; put the directory in db.path", name))
}

// validateLogger keeps the effective values: the contract says any other
// level logs at info and any format but text writes JSON. Those are
// warnings, not problems.
func (l *loader) validateLogger(lg *Logger) {
	level := strings.ToLower(strings.TrimSpace(lg.Level))
	switch level {
	case "debug", "info", "warn", "error":
	default:
		l.warn("logger.level", fmt.Sprintf("%q is not debug, info, warn or error; logging at info", lg.Level))
		level = "info"
	}
	lg.Level = level
	format := strings.ToLower(strings.TrimSpace(lg.Format))
	switch format {
	case "json", "text":
	default:
		l.warn("logger.format", fmt.Sprintf("%q is not json or text; writing JSON", lg.Format))
		format = "json"
	}
	lg.Format = format
}

func (l *loader) validateLocation(loc *Location) {
	if c := loc.Country; c != "" {
		ok := len(c) == 2 && isASCIILetter(c[0]) && isASCIILetter(c[1])
		if l.check("location.country", ok, fmt.Sprintf("want a two-letter country code such as DE or US, got %q", c)) {
			loc.Country = strings.ToUpper(c)
		}
	}
	if p := loc.CountryDB; p != "" {
		f, err := os.Open(p)
		if err == nil {
			f.Close()
		}
		l.check("location.country_db", err == nil, fmt.Sprintf("cannot read %s: %v; give the path of a .mmdb file, or leave country_db empty for the embedded database", p, err))
	}
	if tz := loc.Timezone; tz != "" {
		if tz == "Local" {
			l.check("location.timezone", false, `"Local" is not an IANA zone name; leave timezone empty to use the TZ variable or the system zone`)
		} else if _, err := time.LoadLocation(tz); err != nil {
			l.check("location.timezone", false, fmt.Sprintf("unknown time zone %q; use an IANA zone name such as Europe/Berlin, America/New_York or UTC", tz))
		}
	}
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// validateNetworks: every prefix canonical (no host bits), at most 2^24
// addresses, IPv4 written as IPv4, no prefix inside another.
func (l *loader) validateNetworks(nets []netip.Prefix) {
	ok := make([]bool, len(nets))
	for i, p := range nets {
		path := fmt.Sprintf("networks[%d]", i)
		switch {
		case p.Addr().Is4In6():
			l.check(path, false, fmt.Sprintf("%s is an IPv4-mapped IPv6 prefix; write the IPv4 prefix instead", p))
		case p != p.Masked():
			l.check(path, false, fmt.Sprintf("%s has bits set after the prefix length; write the network %s (or %s/%d for the single address)", p, p.Masked(), p.Addr(), p.Addr().BitLen()))
		case p.Addr().BitLen()-p.Bits() > maxNetworkBits:
			l.check(path, false, fmt.Sprintf("%s is too large to sweep (at most %d addresses); use a prefix of /%d or longer", p, 1<<maxNetworkBits, p.Addr().BitLen()-maxNetworkBits))
		default:
			ok[i] = !l.bad[path]
		}
	}
	for i, p := range nets {
		for j := range i {
			if !ok[i] || !ok[j] || !p.Overlaps(nets[j]) {
				continue
			}
			path := fmt.Sprintf("networks[%d]", i)
			if p == nets[j] {
				l.check(path, false, fmt.Sprintf("%s is listed twice (also networks[%d]); remove one", p, j))
			} else {
				l.check(path, false, fmt.Sprintf("%s overlaps networks[%d] %s; every address must belong to one network, so remove one", p, j, nets[j]))
			}
			ok[i] = false
		}
	}
}

func (l *loader) validateScan(s *Scan) {
	if src := s.Source; src != "" {
		valid := utf8.ValidString(src) && len(src) <= maxSourceLen && strings.TrimSpace(src) == src &&
			!strings.ContainsFunc(src, unicode.IsControl)
		l.check("scan.source", valid, fmt.Sprintf("want a name of at most %d characters, without control characters or surrounding spaces, such as sweep:home; got %q", maxSourceLen, src))
	}
	d := &s.Devices
	l.positive("scan.devices.interval", Duration(d.Interval))
	l.intRange("scan.devices.rate", d.Rate, 1, maxRate)
	l.intRange("scan.devices.rounds", d.Rounds, 1, maxRounds)
	l.notNegative("scan.devices.wait", Duration(d.Wait))
	p := &s.Ports
	l.positive("scan.ports.interval", Duration(p.Interval))
	if p.Custom != "" {
		_, err := ParsePorts(p.Custom)
		if err != nil {
			l.check("scan.ports.custom", false, err.Error())
		}
	}
	l.intRange("scan.ports.concurrency", p.Concurrency, 1, maxConcurrency)
}

// checkName checks an instance or destination name. Names appear in
// variable names (one level between double underscores) and in source
// names, hence the rules.
func checkName(name string) string {
	ok := name != "" && len(name) <= maxNameLen && !strings.Contains(name, "__")
	for i := 0; ok && i < len(name); i++ {
		ch := name[i]
		ok = ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_'
	}
	if ok && (name[0] == '-' || name[0] == '_' || name[len(name)-1] == '-' || name[len(name)-1] == '_') {
		ok = false
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("bad name %q: use lower-case letters, digits, '-' and '_' (at most %d, starting and ending with a letter or digit, no \"__\"), e.g. %s",
		name, maxNameLen, suggestName(name))
}

// suggestName offers a valid name close to s.
func suggestName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-', r == '_', r == ' ', r == '.':
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-_")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if len(out) > maxNameLen {
		out = strings.Trim(out[:maxNameLen], "-_")
	}
	if out == "" {
		return "home"
	}
	return out
}

// sortedNames gives a map's keys in order, so problems come out in a stable order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// endpoint is the part shared by the kinds read over HTTP(S).
type endpoint struct {
	path                string
	enabled             bool
	host                string
	port                *int
	ssl, insecure       bool
	timeout             Duration
	defPort, defTLSPort int
	// cred is the key of the instance's password or token and credSet
	// whether it is set: without ssl it travels as plain text, which the
	// contract says is logged as a warning.
	cred    string
	credSet bool
}

func (l *loader) endpoint(e endpoint) {
	if e.host == "" {
		if e.enabled && !l.bad[e.path+".host"] {
			l.problemKey(e.path+".host", fmt.Sprintf("required when the instance is enabled: set %s.host to the device's address or host name", e.path))
		}
	} else {
		l.host(e.path+".host", e.host, e.path+".port")
	}
	portPath := e.path + ".port"
	if !l.isSet(portPath) && !(l.structMode && *e.port != 0) {
		*e.port = e.defPort
		if e.ssl {
			*e.port = e.defTLSPort
		}
	} else {
		l.intRange(portPath, *e.port, 1, 65535)
	}
	l.positive(e.path+".timeout", e.timeout)
	if e.insecure && !e.ssl {
		l.warn(e.path+".insecure", "has no effect without ssl: true")
	}
	if e.enabled && e.credSet && !e.ssl {
		l.warn(e.path+"."+e.cred, fmt.Sprintf("travels as plain text because ssl is false; set %s.ssl: true if the device serves HTTPS", e.path))
	}
}

func (l *loader) validatePlugins(p *Plugins) {
	for _, n := range sortedNames(p.RouterAPI) {
		v := p.RouterAPI[n]
		l.endpoint(endpoint{"plugins.routerapi." + n, v.Enabled, v.Host, &v.Port, v.SSL, v.Insecure, Duration(v.Timeout), 80, 443, "password", v.Password != ""})
		p.RouterAPI[n] = v
	}
	for _, n := range sortedNames(p.RPCRouter) {
		v := p.RPCRouter[n]
		l.endpoint(endpoint{"plugins.rpcrouter." + n, v.Enabled, v.Host, &v.Port, v.SSL, v.Insecure, Duration(v.Timeout), 80, 443, "password", v.Password != ""})
		p.RPCRouter[n] = v
	}
	for _, n := range sortedNames(p.DNSNode) {
		v := p.DNSNode[n]
		l.endpoint(endpoint{"plugins.dnsnode." + n, v.Enabled, v.Host, &v.Port, v.SSL, v.Insecure, Duration(v.Timeout), 5380, 53443, "token", v.Token != ""})
		p.DNSNode[n] = v
	}
	for _, n := range sortedNames(p.DNSFilter1) {
		v := p.DNSFilter1[n]
		l.endpoint(endpoint{"plugins.dnsfilter1." + n, v.Enabled, v.Host, &v.Port, v.SSL, v.Insecure, Duration(v.Timeout), 80, 443, "password", v.Password != ""})
		p.DNSFilter1[n] = v
	}
	for _, n := range sortedNames(p.DNSFilter2) {
		v := p.DNSFilter2[n]
		l.endpoint(endpoint{"plugins.dnsfilter2." + n, v.Enabled, v.Host, &v.Port, v.SSL, v.Insecure, Duration(v.Timeout), 80, 443, "password", v.Password != ""})
		p.DNSFilter2[n] = v
	}
	for _, n := range sortedNames(p.FlowListener) {
		l.owned("plugins.flowlistener."+n, p.FlowListener[n])
	}
}

// owned places the problems of a type that validates itself (a kind's
// Config): each *FieldError-like error (Key, Message) at its key under
// path, unless decoding that key already failed.
func (l *loader) owned(path string, v interface{ Validate() error }) {
	err := v.Validate()
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fe, ok := e.(interface {
			Key() string
			Message() string
		})
		if !ok {
			l.problemKey(path, e.Error())
			continue
		}
		key := path + "." + fe.Key()
		if l.bad[key] {
			continue
		}
		if ak, ok := e.(interface{ AtKey() bool }); ok && ak.AtKey() {
			l.problemKey(key, fe.Message())
		} else {
			l.problem(key, fe.Message())
		}
	}
}

func (l *loader) validateNotify(m map[string]Notify) {
	for _, name := range sortedNames(m) {
		n := m[name]
		path := "notify." + name
		l.positive(path+".timeout", n.Timeout)
		var blocks []string
		for _, b := range []struct {
			name    string
			present bool
		}{{"push", n.Push != nil}, {"webhook", n.Webhook != nil}, {"http", n.HTTP != nil}} {
			if b.present {
				blocks = append(blocks, b.name)
			}
		}
		switch {
		case len(blocks) == 0 && n.Enabled:
			l.problemKey(path, "has no service block; add exactly one of push, webhook or http (or set enabled: false)")
		case len(blocks) > 1:
			l.problemKey(path+"."+blocks[1], fmt.Sprintf("%s has both %s and %s; a destination has exactly one service block, so move one to a destination of its own", path, blocks[0], blocks[1]))
		}
		req := n.Enabled
		if p := n.Push; p != nil && !l.bad[path+".push"] {
			l.url(path+".push.url", p.URL, req)
			l.intRange(path+".push.priority", p.Priority, 0, maxPriority)
		}
		if w := n.Webhook; w != nil && !l.bad[path+".webhook"] {
			l.url(path+".webhook.url", w.URL, req)
			l.webhookSecret(path+".webhook.secret", w.Secret, req)
		}
		if h := n.HTTP; h != nil && !l.bad[path+".http"] {
			l.url(path+".http.url", h.URL, req)
			l.checkHeaders(path+".http.headers", h.Headers)
			l.body(path+".http.body", h.Body, req)
		}
	}
}

// url checks a required http(s) URL. The value is never echoed: besides
// the http url, which the contract says may hold a token, a push topic URL
// or a webhook URL often carries its credential in the path (a chat
// service's hook URL) or in the query (?auth=).
func (l *loader) url(path, raw string, required bool) {
	if raw == "" {
		if required && !l.bad[path] {
			l.problemKey(path, fmt.Sprintf("required: set %s to an http:// or https:// URL", path))
		}
		return
	}
	msg := urlProblem(raw)
	if msg != "" {
		msg += " (the value is not shown: it may hold a token)"
	}
	l.check(path, msg == "", msg)
}

func urlProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || strings.ContainsFunc(raw, unicode.IsSpace):
		return "want an http:// or https:// URL without spaces"
	case !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return "want a URL that starts with http:// or https://"
	case u.Host == "" || u.Hostname() == "":
		return "want a URL with a host, such as https://ntfy.example.com/topic"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "want a URL whose port is 1 to 65535"
		}
	}
	return ""
}

func (l *loader) webhookSecret(path, secret string, required bool) {
	if secret == "" {
		if required && !l.bad[path] {
			l.problemKey(path, fmt.Sprintf("required: set %s to the signing secret (whsec_ followed by base64, or any text)", path))
		}
		return
	}
	_, err := webhook.SigningKey(secret) // as the notifier will decode it
	l.check(path, err == nil, "a secret that starts with whsec_ must continue with standard base64 (the signing key); check that it was copied whole (the value is not shown)")
}

// headers checks header names (HTTP tokens) and values (no line breaks).
// Values are secret and never echoed.
func (l *loader) checkHeaders(path string, h map[string]string) {
	seen := map[string]string{}
	for _, name := range sortedNames(h) {
		hpath := path + "." + name
		if other, dup := seen[strings.ToLower(name)]; dup {
			l.check(hpath, false, fmt.Sprintf("the header %s is also given as %s (names are case-insensitive); keep one", name, other))
		}
		seen[strings.ToLower(name)] = name
		l.check(hpath, isToken(name), fmt.Sprintf("%q is not a valid header name; use letters, digits and - (e.g. Authorization, X-Api-Key)", name))
		l.check(hpath, !strings.ContainsAny(h[name], "\r\n\x00"), "the header value contains a line break or NUL; put it on one line (the value is not shown)")
	}
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0) {
			return false
		}
	}
	return true
}

func (l *loader) body(path, body string, required bool) {
	if body == "" {
		if required && !l.bad[path] {
			l.problemKey(path, fmt.Sprintf("required: set %s to the request body, a Go text/template such as {\"text\": {{json .Summary}}}", path))
		}
		return
	}
	_, err := BodyTemplate(body)
	if err == nil || l.bad[path] {
		return
	}
	tl, tc, msg := templateErrorPos(body, err)
	where := fmt.Sprintf("template line %d", tl)
	if tc > 0 {
		where += fmt.Sprintf(", column %d", tc)
	}
	p := Problem{Key: path, Msg: fmt.Sprintf("the body does not parse as a Go template: %s: %s; fix the template", where, msg)}
	o, ok := l.origins[path]
	switch {
	case ok && o.env != "":
		p.Env = o.env
	case ok:
		p.File, p.Line, p.Column = l.file, o.line, o.col
		if o.literal && tl > 0 {
			// A block literal (|): template line n is file line n after the |.
			p.Line = o.line + tl
			p.Column = 0
			if tc > 0 {
				p.Column = l.blockIndent(o.line) + tc
			}
		}
	default:
		p.File = l.file
	}
	l.bad[path] = true
	l.problems = append(l.problems, p)
}

// blockIndent gives the indentation of the block literal whose indicator is
// on line (1-based): that of its first non-empty line.
func (l *loader) blockIndent(line int) int {
	lines := strings.Split(string(l.src), "\n")
	for i := line; i < len(lines); i++ { // lines[line] is the line after the indicator
		t := strings.TrimRight(lines[i], " \r")
		if t == "" {
			continue
		}
		return len(t) - len(strings.TrimLeft(t, " "))
	}
	return 0
}

// sortProblems orders file problems by position, then environment problems
// by variable, and drops exact duplicates.
func sortProblems(ps []Problem) []Problem {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(boolInt(a.Env != ""), boolInt(b.Env != "")),
			cmp.Compare(boolInt(a.Line == 0), boolInt(b.Line == 0)),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Env, b.Env),
		)
	})
	return slices.Compact(ps)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
