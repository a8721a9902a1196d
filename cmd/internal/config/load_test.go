package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBounds checks each key's allowed values: every bad value is reported
// at the value's line:column with a message that says what to write.
func TestBounds(t *testing.T) {
	tests := []struct {
		name, yaml, key string
		line, col       int
		msg             string
	}{
		{"port 0", "server:\n  port: 0\n", "server.port", 2, 9, "want a whole number from 1 to 65535, got 0"},
		{"port 65536", "server:\n  port: 65536\n", "server.port", 2, 9, "from 1 to 65535, got 65536"},
		{"port text", "server:\n  port: http\n", "server.port", 2, 9, `want a whole number, got "http"`},
		{"port quoted", "server:\n  port: \"8080\"\n", "server.port", 2, 9, "remove the quotes"},
		{"port float", "server:\n  port: 80.5\n", "server.port", 2, 9, "remove the fraction"},
		{"port huge", "server:\n  port: 99999999999999999999\n", "server.port", 2, 9, "far too large"},
		{"port list", "server:\n  port: [1]\n", "server.port", 2, 9, "want a whole number, got a list"},
		{"host empty", "server:\n  host: \"\"\n", "server.host", 2, 9, "got nothing"},
		{"host with port", "server:\n  host: 0.0.0.0:80\n", "server.host", 2, 9, "set server.port to 80"},
		{"host scheme", "server:\n  host: http://x\n", "server.host", 2, 9, `remove "http://"`},
		{"host brackets", "server:\n  host: \"[::1]\"\n", "server.host", 2, 9, "without brackets"},
		{"host bad", "server:\n  host: a b\n", "server.host", 2, 9, "want an IP address or a host name"},
		{"proxy bits", "server:\n  trusted_proxies: [10.0.0.1/8]\n", "server.trusted_proxies[0]", 2, 21, "write 10.0.0.0/8"},
		{"proxy junk", "server:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - proxy\n", "server.trusted_proxies[1]", 4, 7, "want an IP address or CIDR prefix"},
		{"proxies scalar", "server:\n  trusted_proxies: 10.0.0.1\n", "server.trusted_proxies", 2, 20, "want a list"},
		{"proxy header unknown", "server:\n  proxy_header: true-client-ip\n", "server.proxy_header", 2, 17, "write x-forwarded-for"},
		{"country db missing", "location:\n  country_db: /nonexistent/country.mmdb\n", "location.country_db", 2, 15, "cannot read /nonexistent/country.mmdb"},
		{"base url with a path", "server:\n  base_url: https://jocasta.lan/inventory\n", "server.base_url", 2, 13, "scheme and host only"},
		{"base url without a scheme", "server:\n  base_url: jocasta.lan\n", "server.base_url", 2, 13, "scheme and host only"},
		{"base url with a password", "server:\n  base_url: http://u:S3CRET@jocasta.lan\n", "server.base_url", 2, 13, "the value is not shown"},
		{"origin path", "server:\n  cors:\n    allowed_origins: [\"https://a.example/x\"]\n", "server.cors.allowed_origins[0]", 3, 23, "remove everything after the host"},
		{"origin star", "server:\n  cors:\n    allowed_origins: [\"*\"]\n", "server.cors.allowed_origins[0]", 3, 23, "list each origin"},
		{"origin scheme", "server:\n  cors:\n    allowed_origins: [ftp://a]\n", "server.cors.allowed_origins[0]", 3, 23, "scheme http or https"},
		{"session 0s", "server:\n  auth:\n    session_lifetime: 0s\n", "server.auth.session_lifetime", 3, 23, "above 0s"},
		{"cookie yes", "server:\n  auth:\n    cookie_secure: yes\n", "server.auth.cookie_secure", 3, 20, `want true or false, got "yes"`},
		{"mcp 1", "server:\n  mcp:\n    enabled: 1\n", "server.mcp.enabled", 3, 14, `want true or false, got "1"`},
		{"db path empty", "db:\n  path: \"\"\n", "db.path", 2, 9, "want a directory"},
		{"db name dir", "db:\n  name: data/j.db\n", "db.name", 2, 9, "put the directory in db.path"},
		{"inventory 0s", "inventory:\n  online_window: 0s\n", "inventory.online_window", 2, 18, "above 0s"},
		{"retention bad", "retention:\n  devices: 90d\n", "retention.devices", 2, 12, "write 2160h"},
		{"country 3", "location:\n  country: DEU\n", "location.country", 2, 12, "two-letter country code"},
		{"country digits", "location:\n  country: \"12\"\n", "location.country", 2, 12, "two-letter country code"},
		{"timezone", "location:\n  timezone: Mars/Olympus\n", "location.timezone", 2, 13, "unknown time zone"},
		{"timezone Local", "location:\n  timezone: Local\n", "location.timezone", 2, 13, "leave timezone empty"},
		{"network host bits", "networks:\n  - 10.0.0.1/24\n", "networks[0]", 2, 5, "write the network 10.0.0.0/24"},
		{"network bare", "networks:\n  - 10.0.0.1\n", "networks[0]", 2, 5, "add the prefix length"},
		{"network too big", "networks: [\"2001:db8::/64\"]\n", "networks[0]", 1, 12, "too large to sweep"},
		{"network overlap", "networks:\n  - 10.0.0.0/8\n  - 10.1.0.0/16\n", "networks[1]", 3, 5, "overlaps networks[0] 10.0.0.0/8"},
		{"network twice", "networks:\n  - 10.0.0.0/24\n  - 10.0.0.0/24\n", "networks[1]", 3, 5, "listed twice"},
		{"network 4in6", "networks: [\"::ffff:10.0.0.0/120\"]\n", "networks[0]", 1, 12, "IPv4-mapped"},
		{"source control", "scan:\n  source: \"a\\tb\"\n", "scan.source", 2, 11, "without control characters"},
		{"rate 0", "scan:\n  devices:\n    rate: 0\n", "scan.devices.rate", 3, 11, "from 1 to 1000000, got 0"},
		{"rate negative", "scan:\n  devices:\n    rate: -5\n", "scan.devices.rate", 3, 11, "got -5"},
		{"rate fast", "scan:\n  devices:\n    rate: fast\n", "scan.devices.rate", 3, 11, `got "fast"`},
		{"rounds 0", "scan:\n  devices:\n    rounds: 0\n", "scan.devices.rounds", 3, 13, "from 1 to 100"},
		{"interval 0s", "scan:\n  devices:\n    interval: 0s\n", "scan.devices.interval", 3, 15, "above 0s"},
		{"wait ms", "scan:\n  devices:\n    wait: 500ms\n", "scan.devices.wait", 3, 11, "smallest unit is s"},
		{"resolve on", "scan:\n  devices:\n    resolve_mdns: on\n", "scan.devices.resolve_mdns", 3, 19, "want true or false"},
		{"custom ports", "scan:\n  ports:\n    custom: 22,80,70000\n", "scan.ports.custom", 3, 13, "70000 is above 65535"},
		{"concurrency 0", "scan:\n  ports:\n    concurrency: 0\n", "scan.ports.concurrency", 3, 18, "from 1 to 65535"},
		{"plugin port", "plugins:\n  routerapi:\n    r:\n      port: 0\n", "plugins.routerapi.r.port", 4, 13, "from 1 to 65535, got 0"},
		{"plugin port 65536", "plugins:\n  dnsnode:\n    r:\n      port: 65536\n", "plugins.dnsnode.r.port", 4, 13, "from 1 to 65535"},
		{"plugin timeout", "plugins:\n  dnsfilter1:\n    r:\n      timeout: 0s\n", "plugins.dnsfilter1.r.timeout", 4, 16, "above 0s"},
		{"plugin host port", "plugins:\n  dnsfilter2:\n    r:\n      host: nas.lan:8080\n", "plugins.dnsfilter2.r.host", 4, 13, "set plugins.dnsfilter2.r.port to 8080"},
		{"listen", "plugins:\n  flowlistener:\n    f:\n      listen: \"2055\"\n", "plugins.flowlistener.f.listen", 4, 15, "as :<port> or <ip>:<port>"},
		{"listen port 0", "plugins:\n  flowlistener:\n    f:\n      listen: \":0\"\n", "plugins.flowlistener.f.listen", 4, 15, "1 to 65535"},
		{"exporter prefix", "plugins:\n  flowlistener:\n    f:\n      exporters: [10.0.0.0/8]\n", "plugins.flowlistener.f.exporters[0]", 4, 19, "without /bits"},
		{"instance name", "plugins:\n  routerapi:\n    Core Router:\n      host: x\n", "plugins.routerapi.Core Router", 3, 5, "e.g. core-router"},
		{"instance name __", "notify:\n  a__b:\n    push: {url: \"https://x\"}\n", "notify.a__b", 2, 3, `no "__"`},
		{"priority 6", "notify:\n  n:\n    push:\n      url: https://ntfy.example.com/t\n      priority: 6\n", "notify.n.push.priority", 5, 17, "from 0 to 5, got 6"},
		{"priority -1", "notify:\n  n:\n    push:\n      url: https://ntfy.example.com/t\n      priority: -1\n", "notify.n.push.priority", 5, 17, "from 0 to 5"},
		{"push url scheme", "notify:\n  n:\n    push:\n      url: ntfy.example.com/t\n", "notify.n.push.url", 4, 12, "starts with http:// or https://"},
		{"notify timeout", "notify:\n  n:\n    timeout: 5\n    push: {url: \"https://x\"}\n", "notify.n.timeout", 3, 14, "add a unit, e.g. 5s"},
		{"webhook whsec", "notify:\n  n:\n    webhook:\n      url: https://h.example\n      secret: whsec_!!!\n", "notify.n.webhook.secret", 5, 15, "standard base64"},
		{"header name", "notify:\n  n:\n    http:\n      url: https://h.example\n      body: x\n      headers:\n        \"Bad Header\": v\n", "notify.n.http.headers.Bad Header", 7, 23, "not a valid header name"},
		{"header twice", "notify:\n  n:\n    http:\n      url: https://h.example\n      body: x\n      headers:\n        Accept: a\n        ACCEPT: b\n", "notify.n.http.headers.Accept", 7, 17, "also given as ACCEPT"},
		{"headers list", "notify:\n  n:\n    http:\n      url: https://h.example\n      body: x\n      headers: [a]\n", "notify.n.http.headers", 6, 16, "want a mapping of header names"},
		{"block scalar", "notify:\n  n:\n    push: https://x\n", "notify.n.push", 3, 11, "want a mapping of keys (url, token, priority)"},
		{"section scalar", "server: 8080\n", "server", 1, 9, "want a mapping of keys (host, port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := problems(t, tt.yaml)
			p := findProblem(t, ps, tt.key)
			if p.Line != tt.line || p.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%s)", p.Line, p.Column, tt.line, tt.col, p)
			}
			if !strings.Contains(p.Msg, tt.msg) {
				t.Errorf("message %q, want it to contain %q", p.Msg, tt.msg)
			}
			if strings.Contains(render(ps), "S3CRET") {
				t.Errorf("a secret in the message: %s", render(ps))
			}
			if len(ps) != 1 {
				t.Errorf("want exactly one problem, got:\n%s", render(ps))
			}
			if !strings.HasSuffix(p.File, "jocasta.yaml") {
				t.Errorf("File = %q", p.File)
			}
		})
	}
}

// TestGoodValues checks values at and inside the bounds.
func TestGoodValues(t *testing.T) {
	c := mustLoad(t, `
server:
  host: "::"
  port: 65535
  trusted_proxies: [10.0.0.1, 192.168.0.0/16, "fd00::/8"]
  cors:
    allowed_origins: ["HTTPS://Dash.Example.com:443", "http://localhost:3000", "http://[::1]:8080"]
location:
  country: de
  timezone: Europe/Berlin
networks: [192.168.1.0/24, 10.0.0.0/8, "fd00::/104", 172.16.0.5/32]
scan:
  source: "sweep:home box"
  devices: {rate: 1, rounds: 100, wait: 0s}
  ports: {custom: "1-65535", concurrency: 65535}
plugins:
  routerapi:
    core: {enabled: true, host: router.lan., port: 1, ssl: true}
  flowlistener:
    a: {listen: "[::1]:2055", exporters: ["fe80::1", 10.0.0.1]}
    b: {listen: "127.0.0.1:65535"}
notify:
  n:
    push: {url: "https://ntfy.example.com/t", priority: 5}
  w:
    webhook: {url: "http://h.example:8080/x", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
  off:
    enabled: false
`)
	want := []string{"https://dash.example.com", "http://localhost:3000", "http://[::1]:8080"}
	if diff := cmp.Diff(want, c.Server.CORS.AllowedOrigins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}
	if c.Location.Country != "DE" {
		t.Errorf("country %q, want DE", c.Location.Country)
	}
	wantProxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fd00::/8")}
	if diff := cmp.Diff(wantProxies, c.Server.TrustedProxies, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("proxies (-want +got):\n%s", diff)
	}
	if p := c.Plugins.RouterAPI["core"].Port; p != 1 {
		t.Errorf("explicit port %d, want 1 (not the ssl default)", p)
	}
	if c.Scan.Source != "sweep:home box" {
		t.Errorf("source %q", c.Scan.Source)
	}
	if c.Notify["off"].Enabled || c.Notify["off"].Push != nil {
		t.Errorf("disabled destination: %+v", c.Notify["off"])
	}
}

// TestManyProblems checks that every problem of a file is reported at once,
// in file order, each at its line, with unknown keys suggesting the key.
func TestManyProblems(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "many_problems.yaml"), nil)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load = %v, want *Error", err)
	}
	want := []struct {
		line int
		key  string
		msg  string
	}{
		{3, "server.prot", `unknown key "prot"; did you mean "port"?`},
		{4, "server.host", "set server.port to 8080"},
		{6, "server.auth.idle_timeout", "write it with one unit: 90m"},
		{8, "db.name", "put the directory in db.path"},
		{10, "rate", `unknown key "rate"; it belongs under scan.devices`},
		{12, "networks[0]", "write the network 192.168.1.0/24"},
		{13, "networks[1]", "want a CIDR prefix such as 192.168.1.0/24"},
		{16, "scan.devices.rate", `want a whole number, got "fast"`},
		{17, "scan.devices.rounds", "from 1 to 100, got 0"},
		{18, "scan.devices.resolve_mdns", `want true or false, got "yes"`},
		{21, "plugins.routerapi.core.host", "required when the instance is enabled"},
		{24, "plugins.routerapi.core.pasword", `did you mean "password"?`},
		{26, "plugins.flowlistener.edge.exporters", "required when the listener is enabled"},
		{29, "notify.phone", "has no service block"},
		{33, "notify.both.webhook", "has both push and webhook"},
		{35, "Server", `unknown key "Server"; did you mean "server"?`},
	}
	if len(ce.Problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(ce.Problems), len(want), render(ce.Problems))
	}
	for i, w := range want {
		if i >= len(ce.Problems) {
			break
		}
		p := ce.Problems[i]
		if p.Line != w.line || p.Key != w.key || !strings.Contains(p.Msg, w.msg) {
			t.Errorf("problem %d = %s\nwant line %d, key %s, message with %q", i, p, w.line, w.key, w.msg)
		}
	}
	// The rendering: one problem per line, "file:line:col: key: msg".
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(ce.Problems) {
		t.Errorf("Error() has %d lines for %d problems", len(lines), len(ce.Problems))
	}
	if want := "testdata/many_problems.yaml:3:3: server.prot: unknown key"; !strings.HasPrefix(lines[0], want) {
		t.Errorf("first line %q, want prefix %q", lines[0], want)
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct{ name, yaml, key, msg string }{
		{"typo", "scan:\n  devics: {}\n", "scan.devics", `did you mean "devices"?`},
		{"wrong place", "server:\n  online_window: 5m\n", "server.online_window", "it belongs under inventory"},
		{"nothing close", "logger:\n  colour: red\n", "logger.colour", "the keys of logger are level, format"},
		{"plugin kind", "plugins:\n  routerap1: {}\n", "plugins.routerap1", `did you mean "routerapi"?`},
		{"instance key", "plugins:\n  dnsnode:\n    d: {tokn: x}\n", "plugins.dnsnode.d.tokn", `did you mean "token"?`},
		{"notify block", "notify:\n  n: {pushh: {}}\n", "notify.n.pushh", `did you mean "push"?`},
		{"top", "netwroks: []\n", "netwroks", `did you mean "networks"?`},
		{"numeric key", "1: x\n", "1", `unknown key "1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := findProblem(t, problems(t, tt.yaml), tt.key)
			if !strings.Contains(p.Msg, tt.msg) {
				t.Errorf("%q, want %q", p.Msg, tt.msg)
			}
			if p.Line == 0 {
				t.Errorf("no line: %s", p)
			}
		})
	}
}

// TestPlugins checks that required keys are enforced only for enabled instances.
func TestPlugins(t *testing.T) {
	mustLoad(t, "plugins:\n  routerapi:\n    core: {user: admin}\n  flowlistener:\n    f: {enabled: false}\n")
	for _, kind := range []string{"routerapi", "rpcrouter", "dnsnode", "dnsfilter1", "dnsfilter2"} {
		t.Run(kind, func(t *testing.T) {
			mustLoad(t, "plugins:\n  "+kind+":\n    x: {enabled: false}\n")
			p := findProblem(t, problems(t, "plugins:\n  "+kind+":\n    x:\n      enabled: true\n"), "plugins."+kind+".x.host")
			if p.Line != 3 || p.Column != 5 {
				t.Errorf("missing host reported at %d:%d, want the instance key 3:5", p.Line, p.Column)
			}
			c := mustLoad(t, "plugins:\n  "+kind+":\n    x: {enabled: true, host: 192.0.2.1}\n")
			if !c.Plugins.enabled(kind, "x") {
				t.Errorf("instance not enabled")
			}
		})
	}
	c := mustLoad(t, "plugins:\n  routerapi:\n    x: {host: 192.0.2.1, insecure: true}\n")
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "plugins.routerapi.x.insecure: has no effect without ssl") {
		t.Errorf("Warnings = %q", c.Warnings)
	}
}

// TestPlainTextCredentialWarning checks the warning the contract asks for
// when an enabled instance sends its password or token without ssl, and
// that the warning never shows the secret.
func TestPlainTextCredentialWarning(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"routerapi", "plugins:\n  routerapi:\n    x: {enabled: true, host: h, password: S3CR3T}\n", "plugins.routerapi.x.password: travels as plain text"},
		{"rpcrouter", "plugins:\n  rpcrouter:\n    x: {enabled: true, host: h, password: S3CR3T}\n", "plugins.rpcrouter.x.password: travels as plain text"},
		{"dnsnode", "plugins:\n  dnsnode:\n    x: {enabled: true, host: h, token: S3CR3T}\n", "plugins.dnsnode.x.token: travels as plain text"},
		{"dnsfilter1", "plugins:\n  dnsfilter1:\n    x: {enabled: true, host: h, password: S3CR3T}\n", "plugins.dnsfilter1.x.password: travels as plain text"},
		{"dnsfilter2", "plugins:\n  dnsfilter2:\n    x: {enabled: true, host: h, password: S3CR3T}\n", "plugins.dnsfilter2.x.password: travels as plain text"},
		{"with ssl", "plugins:\n  routerapi:\n    x: {enabled: true, host: h, password: S3CR3T, ssl: true}\n", ""},
		{"disabled", "plugins:\n  routerapi:\n    x: {host: h, password: S3CR3T}\n", ""},
		{"no password", "plugins:\n  dnsfilter1:\n    x: {enabled: true, host: h}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.yaml)
			got := strings.Join(c.Warnings, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Warnings = %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "S3CR3T") {
				t.Errorf("warning shows the secret: %q", got)
			}
		})
	}
}

// enabled reports whether the instance name of kind is enabled.
func (p Plugins) enabled(kind, name string) bool {
	switch kind {
	case "routerapi":
		return p.RouterAPI[name].Enabled
	case "rpcrouter":
		return p.RPCRouter[name].Enabled
	case "dnsnode":
		return p.DNSNode[name].Enabled
	case "dnsfilter1":
		return p.DNSFilter1[name].Enabled
	case "dnsfilter2":
		return p.DNSFilter2[name].Enabled
	case "flowlistener":
		return p.FlowListener[name].Enabled
	}
	return false
}

func TestNotify(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		p := findProblem(t, problems(t, "notify:\n  n:\n    timeout: 5s\n"), "notify.n")
		if p.Line != 2 || !strings.Contains(p.Msg, "add exactly one of push, webhook or http") {
			t.Errorf("%s", p)
		}
	})
	t.Run("null destination", func(t *testing.T) {
		findProblem(t, problems(t, "notify:\n  n:\n"), "notify.n")
	})
	t.Run("two", func(t *testing.T) {
		p := findProblem(t, problems(t, "notify:\n  n:\n    webhook: {url: \"https://a\", secret: s}\n    http: {url: \"https://b\", body: x}\n"), "notify.n.http")
		if p.Line != 4 || !strings.Contains(p.Msg, "has both webhook and http") {
			t.Errorf("%s", p)
		}
	})
	t.Run("disabled two", func(t *testing.T) {
		findProblem(t, problems(t, "notify:\n  n:\n    enabled: false\n    push: {}\n    http: {}\n"), "notify.n.http")
	})
	t.Run("disabled none", func(t *testing.T) {
		mustLoad(t, "notify:\n  n:\n    enabled: false\n")
	})
	t.Run("required", func(t *testing.T) {
		ps := problems(t, "notify:\n  p:\n    push: {}\n  w:\n    webhook:\n  h:\n    http: {}\n")
		for _, key := range []string{"notify.p.push.url", "notify.w.webhook.url", "notify.w.webhook.secret", "notify.h.http.url", "notify.h.http.body"} {
			if p := findProblem(t, ps, key); !strings.Contains(p.Msg, "required") || p.Line == 0 {
				t.Errorf("%s", p)
			}
		}
		if len(ps) != 5 {
			t.Errorf("want 5 problems:\n%s", render(ps))
		}
	})
	t.Run("disabled without required", func(t *testing.T) {
		mustLoad(t, "notify:\n  p:\n    enabled: false\n    push: {}\n")
	})
	for _, tt := range []struct{ name, block, key string }{
		{"http url not echoed", "http:\n      url: hxxps://chat.example.com/hooks/S3CR3T-T0K3N\n      body: x\n", "notify.h.http.url"},
		{"webhook path not echoed", "webhook:\n      url: \"https://chat.example.com/hooks/S3CR3T T0K3N\"\n      secret: s\n", "notify.h.webhook.url"},
		{"webhook query not echoed", "webhook:\n      url: \"ftp://h.example/x?token=S3CR3T\"\n      secret: s\n", "notify.h.webhook.url"},
		{"push topic not echoed", "push:\n      url: ntfy.example.com/S3CR3T-topic\n", "notify.h.push.url"},
		{"push auth not echoed", "push:\n      url: \"https://ntfy.example.com:99999/t?auth=S3CR3T\"\n", "notify.h.push.url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps := problems(t, "notify:\n  h:\n    "+tt.block)
			p := findProblem(t, ps, tt.key)
			if strings.Contains(p.String(), "S3CR3T") || !strings.Contains(p.Msg, "not shown") {
				t.Errorf("problem shows the secret URL: %s", p)
			}
		})
	}
	t.Run("header value not echoed", func(t *testing.T) {
		ps := problems(t, "notify:\n  h:\n    http:\n      url: https://x\n      body: x\n      headers:\n        Authorization: \"Bearer S3CR3T\\nX: y\"\n")
		p := findProblem(t, ps, "notify.h.http.headers.Authorization")
		if strings.Contains(p.String(), "S3CR3T") || !strings.Contains(p.Msg, "line break") {
			t.Errorf("%s", p)
		}
	})
}

// TestTemplateError checks that a body that does not parse is reported with
// the template's line and column, and the exact file position for a block.
func TestTemplateError(t *testing.T) {
	src := "notify:\n  h:\n    http:\n      url: https://x.example\n      body: |\n        {\n          \"a\": {{json .Kind}},\n          \"b\": {{foo .Summary}}\n        }\n"
	p := findProblem(t, problems(t, src), "notify.h.http.body")
	if p.Line != 8 || p.Column != 16 {
		t.Errorf("position %d:%d, want 8:16 (%s)", p.Line, p.Column, p)
	}
	if !strings.Contains(p.Msg, `template line 3, column 8: function "foo" not defined`) {
		t.Errorf("message %q", p.Msg)
	}
	// A quoted body: the position is the value's, the template's is in the message.
	p = findProblem(t, problems(t, "notify:\n  h:\n    http:\n      url: https://x.example\n      body: \"ok {{.Kind\"\n"), "notify.h.http.body")
	if p.Line != 5 || p.Column != 13 || !strings.Contains(p.Msg, "template line 1, column 4: unclosed action") {
		t.Errorf("%s", p)
	}
	mustLoad(t, "notify:\n  h:\n    http:\n      url: https://x.example\n      body: '{{.Device.Label | default \"x\" | upper | lower}} {{json .}}'\n")
}

func TestYAMLFeatures(t *testing.T) {
	t.Run("anchors and merge", func(t *testing.T) {
		c := mustLoad(t, `
x-router: &router
  enabled: true
  user: jocasta
  password: pw
  timeout: 20s
plugins:
  routerapi:
    a:
      <<: *router
      host: 192.0.2.1
    b:
      <<: *router
      host: 192.0.2.2
      timeout: 5s
networks: &nets [10.0.0.0/24]
server:
  trusted_proxies: *nets
`)
		a, b := c.Plugins.RouterAPI["a"], c.Plugins.RouterAPI["b"]
		if !a.Enabled || a.User != "jocasta" || a.Timeout.String() != "20s" || b.Timeout.String() != "5s" || b.Password != "pw" {
			t.Errorf("merge: a=%+v b=%+v", a, b)
		}
		if len(c.Server.TrustedProxies) != 1 {
			t.Errorf("alias list: %v", c.Server.TrustedProxies)
		}
	})
	t.Run("undefined alias", func(t *testing.T) {
		p := findProblem(t, problems(t, "server:\n  host: *nope\n"), "server.host")
		if p.Line != 2 || !strings.Contains(p.Msg, "quote the value if it is text") || strings.Contains(p.Msg, "nope") {
			t.Errorf("%s", p)
		}
	})
	t.Run("alias loop", func(t *testing.T) {
		ps := problems(t, "server: &s\n  cors: *s\n")
		if ps[0].Line == 0 || !strings.Contains(render(ps), "remove the loop") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		ps := problems(t, "server:\n  port: [8080\n")
		if len(ps) != 1 || ps[0].Line != 2 || !strings.Contains(ps[0].Msg, "not valid YAML") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("tab", func(t *testing.T) {
		ps := problems(t, "server:\n\tport: 1\n")
		if ps[0].Line != 2 || !strings.Contains(ps[0].Msg, "indent with spaces") || strings.Contains(ps[0].Msg, "\t") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("duplicate key", func(t *testing.T) {
		ps := problems(t, "server:\n  port: 1\n  port: 2\n")
		if ps[0].Line != 3 || !strings.Contains(ps[0].Msg, "already defined") || !strings.Contains(ps[0].Msg, "keep one") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("two documents", func(t *testing.T) {
		ps := problems(t, "server: {port: 1}\n---\nserver: {port: 2}\n")
		if ps[0].Line != 3 || !strings.Contains(ps[0].Msg, "second YAML document") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("top-level list", func(t *testing.T) {
		ps := problems(t, "- a\n- b\n")
		if ps[0].Line != 1 || !strings.Contains(ps[0].Msg, "want a mapping of keys") {
			t.Errorf("%s", render(ps))
		}
	})
	t.Run("tags", func(t *testing.T) {
		c := mustLoad(t, "plugins:\n  routerapi:\n    r: {password: !!str 1234}\n")
		if c.Plugins.RouterAPI["r"].Password != "1234" {
			t.Errorf("!!str: %q", c.Plugins.RouterAPI["r"].Password)
		}
		findProblem(t, problems(t, "db:\n  name: !custom x\n"), "db.name")
		// A password that starts with ! or * is not echoed in the error.
		for _, pw := range []string{"!Hunter2", "*Hunter2!"} {
			ps := problems(t, "plugins:\n  routerapi:\n    r:\n      enabled: true\n      host: 192.0.2.1\n      password: "+pw+"\n")
			if r := render(ps); strings.Contains(r, "Hunter2") || !strings.Contains(r, "quote the value") {
				t.Errorf("password %s: %s", pw, r)
			}
		}
	})
	t.Run("byte order mark and CRLF", func(t *testing.T) {
		c := mustLoad(t, "\uFEFFserver:\r\n  port: 9000\r\n")
		if c.Server.Port != 9000 {
			t.Errorf("port %d", c.Server.Port)
		}
	})
	t.Run("empty and comments", func(t *testing.T) {
		for _, src := range []string{"", "# only a comment\n", "---\n", "server:\n", "networks:\n", "plugins:\n  routerapi:\n"} {
			mustLoad(t, src)
		}
	})
	t.Run("text keeps what was written", func(t *testing.T) {
		c := mustLoad(t, "plugins:\n  dnsfilter2:\n    d: {user: 0123, password: true}\nscan:\n  source: 1e3\n")
		if d := c.Plugins.DNSFilter2["d"]; d.User != "0123" || d.Password != "true" {
			t.Errorf("%+v", d)
		}
		if c.Scan.Source != "1e3" {
			t.Errorf("source %q", c.Scan.Source)
		}
	})
}

func TestLogger(t *testing.T) {
	tests := []struct {
		yaml, level, format string
		warnings            int
	}{
		{"logger: {level: debug, format: text}", "debug", "text", 0},
		{"logger: {level: WARN, format: TEXT}", "warn", "text", 0},
		{"logger: {level: verbose}", "info", "json", 1},
		{"logger: {format: logfmt}", "info", "json", 1},
		{"logger: {level: trace, format: xml}", "info", "json", 2},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			c := mustLoad(t, tt.yaml+"\n")
			if c.Logger.Level != tt.level || c.Logger.Format != tt.format || len(c.Warnings) != tt.warnings {
				t.Errorf("got %q %q %q", c.Logger.Level, c.Logger.Format, c.Warnings)
			}
			for _, w := range c.Warnings {
				if !strings.Contains(w, "jocasta.yaml:1:") {
					t.Errorf("warning without position: %q", w)
				}
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
}
