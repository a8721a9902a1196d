package config

import (
	"github.com/jocasta/jocasta/sources"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDefaults checks every key's default against the contract, through
// Load with no file and no variables, so that the defaults users get are
// the ones tested.
func TestDefaults(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := func(n int) Duration { return Duration(time.Duration(n) * time.Hour) }
	tests := []struct {
		key       string
		got, want any
	}{
		{"server.host", c.Server.Host, "localhost"},
		{"server.port", c.Server.Port, 8080},
		{"server.trusted_proxies", len(c.Server.TrustedProxies), 0},
		{"server.proxy_header", c.Server.ProxyHeader, "x-forwarded-for"},
		{"server.base_url", c.Server.BaseURL, ""},
		{"server.cors.allowed_origins", len(c.Server.CORS.AllowedOrigins), 0},
		{"server.auth.session_lifetime", c.Server.Auth.SessionLifetime, h(168)},
		{"server.auth.idle_timeout", c.Server.Auth.IdleTimeout, h(24)},
		{"server.auth.cookie_secure", c.Server.Auth.CookieSecure, true},
		{"server.mcp.enabled", c.Server.MCP.Enabled, false},
		{"db.path", c.DB.Path, "."},
		{"db.name", c.DB.Name, "jocasta.db"},
		{"logger.level", c.Logger.Level, "info"},
		{"logger.format", c.Logger.Format, "json"},
		{"inventory.online_window", c.Inventory.OnlineWindow, Duration(15 * time.Minute)},
		{"inventory.address_grace", c.Inventory.AddressGrace, h(6)},
		{"retention.history", c.Retention.History, h(2160)},
		{"retention.traffic", c.Retention.Traffic, h(720)},
		{"retention.dns", c.Retention.DNS, h(720)},
		{"retention.devices", c.Retention.Devices, h(2160)},
		{"location.country", c.Location.Country, ""},
		{"location.timezone", c.Location.Timezone, ""},
		{"location.country_db", c.Location.CountryDB, ""},
		{"networks", len(c.Networks), 0},
		{"scan.source", c.Scan.Source, ""},
		{"scan.devices.enabled", c.Scan.Devices.Enabled, true},
		{"scan.devices.interval", Duration(c.Scan.Devices.Interval), Duration(5 * time.Minute)},
		{"scan.devices.rate", c.Scan.Devices.Rate, 1000},
		{"scan.devices.rounds", c.Scan.Devices.Rounds, 2},
		{"scan.devices.wait", Duration(c.Scan.Devices.Wait), Duration(2 * time.Second)},
		{"scan.devices.resolve_names", c.Scan.Devices.ResolveNames, true},
		{"scan.devices.resolve_macs", c.Scan.Devices.ResolveMACs, true},
		{"scan.devices.resolve_mdns", c.Scan.Devices.ResolveMDNS, true},
		{"scan.devices.resolve_netbios", c.Scan.Devices.ResolveNetBIOS, true},
		{"scan.devices.resolve_dnssd", c.Scan.Devices.ResolveDNSSD, true},
		{"scan.devices.resolve_ssdp", c.Scan.Devices.ResolveSSDP, true},
		{"scan.ports.enabled", c.Scan.Ports.Enabled, false},
		{"scan.ports.interval", Duration(c.Scan.Ports.Interval), h(6)},
		{"scan.ports.custom", c.Scan.Ports.Custom, ""},
		{"scan.ports.concurrency", c.Scan.Ports.Concurrency, 64},
		{"plugins.routerapi", len(c.Plugins.RouterAPI), 0},
		{"plugins.rpcrouter", len(c.Plugins.RPCRouter), 0},
		{"plugins.flowlistener", len(c.Plugins.FlowListener), 0},
		{"plugins.dnsnode", len(c.Plugins.DNSNode), 0},
		{"plugins.dnsfilter1", len(c.Plugins.DNSFilter1), 0},
		{"plugins.dnsfilter2", len(c.Plugins.DNSFilter2), 0},
		{"notify", len(c.Notify), 0},
	}
	tests = append(tests, sensorDefaults(c)...)
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.key] = true
		t.Run(tt.key, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %v, want %v", tt.key, tt.got, tt.want)
			}
		})
	}
	// Every key outside the instance maps has a row above.
	for _, p := range patterns() {
		if strings.Contains(p, "*") || isSectionPattern(p) {
			continue
		}
		if !covered[p] {
			t.Errorf("no default test for %s", p)
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("Warnings = %q, want none", c.Warnings)
	}
	if diff := cmp.Diff(Defaults(), *c, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Load(\"\", nil) differs from Defaults() (-want +got):\n%s", diff)
	}
}

// isSectionPattern reports whether p names a section (a key with keys under
// it) rather than a value or an instance map.
func isSectionPattern(p string) bool {
	var found *field
	schema().walk(func(f *field) {
		if f.pattern == p {
			found = f
		}
	})
	return found != nil && found.kind == kindSection
}

// TestInstanceDefaults checks the defaults of every plugin kind and of a
// notify destination: each instance written with only its required keys.
func TestInstanceDefaults(t *testing.T) {
	c := mustLoad(t, `
plugins:
  routerapi:
    r: {}
    rs: {ssl: true}
  rpcrouter:
    r: {}
    rs: {ssl: true}
  flowlistener:
    f: {}
  dnsnode:
    d: {}
    ds: {ssl: true}
  dnsfilter1:
    a: {}
    as: {ssl: true}
  dnsfilter2:
    b:
    bs: {ssl: true}
notify:
  n:
    push: {url: "https://ntfy.example.com/t"}
`)
	ten := Duration(10 * time.Second)
	tenStd := 10 * time.Second // the plugin kinds' own Config types hold time.Duration
	tests := []struct {
		name      string
		got, want any
	}{
		{"routerapi", c.Plugins.RouterAPI["r"], RouterAPI{EndpointConfig: sources.EndpointConfig{Port: 80, Timeout: tenStd}}},
		{"routerapi ssl", c.Plugins.RouterAPI["rs"], RouterAPI{EndpointConfig: sources.EndpointConfig{Port: 443, SSL: true, Timeout: tenStd}}},
		{"rpcrouter", c.Plugins.RPCRouter["r"], RPCRouter{EndpointConfig: sources.EndpointConfig{Port: 80, Timeout: tenStd}}},
		{"rpcrouter ssl", c.Plugins.RPCRouter["rs"], RPCRouter{EndpointConfig: sources.EndpointConfig{Port: 443, SSL: true, Timeout: tenStd}}},
		{"flowlistener", c.Plugins.FlowListener["f"].Listen, ":2055"},
		{"flowlistener enabled", c.Plugins.FlowListener["f"].Enabled, false},
		{"flowlistener exporters", len(c.Plugins.FlowListener["f"].Exporters), 0},
		{"dnsnode", c.Plugins.DNSNode["d"], DNSNode{EndpointConfig: sources.EndpointConfig{Port: 5380, Timeout: tenStd}}},
		{"dnsnode ssl", c.Plugins.DNSNode["ds"], DNSNode{EndpointConfig: sources.EndpointConfig{Port: 53443, SSL: true, Timeout: tenStd}}},
		{"dnsfilter1", c.Plugins.DNSFilter1["a"], DNSFilter1{EndpointConfig: sources.EndpointConfig{Port: 80, Timeout: tenStd}}},
		{"dnsfilter1 ssl", c.Plugins.DNSFilter1["as"], DNSFilter1{EndpointConfig: sources.EndpointConfig{Port: 443, SSL: true, Timeout: tenStd}}},
		{"dnsfilter2 (null)", c.Plugins.DNSFilter2["b"], DNSFilter2{EndpointConfig: sources.EndpointConfig{Port: 80, Timeout: tenStd}}},
		{"dnsfilter2 ssl", c.Plugins.DNSFilter2["bs"], DNSFilter2{EndpointConfig: sources.EndpointConfig{Port: 443, SSL: true, Timeout: tenStd}}},
		{"notify enabled", c.Notify["n"].Enabled, true},
		{"notify timeout", c.Notify["n"].Timeout, ten},
		{"push token", c.Notify["n"].Push.Token, ""},
		{"push priority", c.Notify["n"].Push.Priority, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultsValidate(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v", err)
	}
	c.Plugins.RouterAPI = map[string]RouterAPI{"x": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "10.0.0.1", SSL: true, Timeout: time.Duration(defaultTimeout)}}}
	c.Server.Port = 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "server.port: want a whole number from 1 to 65535, got 0") {
		t.Fatalf("Validate() = %v, want a server.port problem", err)
	}
	c.Server.Port = 8080
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.Plugins.RouterAPI["x"].Port; got != 443 {
		t.Errorf("Validate filled port %d, want 443", got)
	}
}

func TestPaths(t *testing.T) {
	c := Defaults()
	c.DB.Path = "/data"
	tests := []struct{ name, got, want string }{
		{"DBFile", c.DBFile(), "/data/jocasta.db"},
		{"SocketPath", c.SocketPath(), "/data/jocasta.sock"},
		{"ScanSource default", c.ScanSource("nas"), "sweep:nas"},
	}
	c2 := Defaults()
	c2.Scan.Source = "sweep:box"
	tests = append(tests, struct{ name, got, want string }{"ScanSource set", c2.ScanSource("nas"), "sweep:box"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if !slices.Equal(patterns()[:2], []string{"server", "server.host"}) {
		t.Errorf("patterns start %q", patterns()[:2])
	}
}
