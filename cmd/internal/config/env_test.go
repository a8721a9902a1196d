package config

import (
	"github.com/jocasta/jocasta/sources"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEnvMapping checks that each kind of variable lands on its key.
func TestEnvMapping(t *testing.T) {
	tests := []struct {
		env  string
		got  func(c *Config) any
		want any
	}{
		{"SVC_SERVER__HOST=0.0.0.0", func(c *Config) any { return c.Server.Host }, "0.0.0.0"},
		{"SVC_SERVER__PORT=9090", func(c *Config) any { return c.Server.Port }, 9090},
		{"SVC_SERVER__PORT= 9090 ", func(c *Config) any { return c.Server.Port }, 9090},
		{"SVC_SERVER__TRUSTED_PROXIES=10.0.0.1, 192.168.0.0/16", func(c *Config) any { return c.Server.TrustedProxies },
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16")}},
		{"SVC_SERVER__CORS__ALLOWED_ORIGINS=https://a.example,http://b.example:8080", func(c *Config) any { return c.Server.CORS.AllowedOrigins },
			[]string{"https://a.example", "http://b.example:8080"}},
		{"SVC_SERVER__AUTH__SESSION_LIFETIME=720h", func(c *Config) any { return c.Server.Auth.SessionLifetime }, Duration(720 * time.Hour)},
		{"SVC_SERVER__AUTH__IDLE_TIMEOUT=90m", func(c *Config) any { return c.Server.Auth.IdleTimeout }, Duration(90 * time.Minute)},
		{"SVC_SERVER__AUTH__COOKIE_SECURE=false", func(c *Config) any { return c.Server.Auth.CookieSecure }, false},
		{"SVC_SERVER__MCP__ENABLED=TRUE", func(c *Config) any { return c.Server.MCP.Enabled }, true},
		{"SVC_DB__PATH=/data", func(c *Config) any { return c.DB.Path }, "/data"},
		{"SVC_DB__NAME=inv.db", func(c *Config) any { return c.DB.Name }, "inv.db"},
		{"SVC_LOGGER__LEVEL=debug", func(c *Config) any { return c.Logger.Level }, "debug"},
		{"SVC_LOGGER__FORMAT=text", func(c *Config) any { return c.Logger.Format }, "text"},
		{"SVC_INVENTORY__ONLINE_WINDOW=30m", func(c *Config) any { return c.Inventory.OnlineWindow }, Duration(30 * time.Minute)},
		{"SVC_INVENTORY__ADDRESS_GRACE=0s", func(c *Config) any { return c.Inventory.AddressGrace }, Duration(0)},
		{"SVC_RETENTION__HISTORY=0s", func(c *Config) any { return c.Retention.History }, Duration(0)},
		{"SVC_RETENTION__TRAFFIC=24h", func(c *Config) any { return c.Retention.Traffic }, Duration(24 * time.Hour)},
		{"SVC_RETENTION__DNS=48h", func(c *Config) any { return c.Retention.DNS }, Duration(48 * time.Hour)},
		{"SVC_RETENTION__DEVICES=1h", func(c *Config) any { return c.Retention.Devices }, Duration(time.Hour)},
		{"SVC_LOCATION__COUNTRY=nz", func(c *Config) any { return c.Location.Country }, "NZ"},
		{"SVC_LOCATION__TIMEZONE=Pacific/Auckland", func(c *Config) any { return c.Location.Timezone }, "Pacific/Auckland"},
		{"SVC_NETWORKS=10.0.0.0/24,10.0.1.0/24", func(c *Config) any { return c.Networks },
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("10.0.1.0/24")}},
		{"SVC_NETWORKS=", func(c *Config) any { return len(c.Networks) }, 0},
		{"SVC_SCAN__SOURCE=sweep:container", func(c *Config) any { return c.Scan.Source }, "sweep:container"},
		{"SVC_SCAN__DEVICES__ENABLED=false", func(c *Config) any { return c.Scan.Devices.Enabled }, false},
		{"SVC_SCAN__DEVICES__INTERVAL=1m", func(c *Config) any { return Duration(c.Scan.Devices.Interval) }, Duration(time.Minute)},
		{"SVC_SCAN__DEVICES__RATE=50", func(c *Config) any { return c.Scan.Devices.Rate }, 50},
		{"SVC_SCAN__DEVICES__ROUNDS=3", func(c *Config) any { return c.Scan.Devices.Rounds }, 3},
		{"SVC_SCAN__DEVICES__WAIT=0s", func(c *Config) any { return Duration(c.Scan.Devices.Wait) }, Duration(0)},
		{"SVC_SCAN__DEVICES__RESOLVE_NAMES=false", func(c *Config) any { return c.Scan.Devices.ResolveNames }, false},
		{"SVC_SCAN__DEVICES__RESOLVE_MACS=false", func(c *Config) any { return c.Scan.Devices.ResolveMACs }, false},
		{"SVC_SCAN__DEVICES__RESOLVE_MDNS=false", func(c *Config) any { return c.Scan.Devices.ResolveMDNS }, false},
		{"SVC_SCAN__DEVICES__RESOLVE_NETBIOS=False", func(c *Config) any { return c.Scan.Devices.ResolveNetBIOS }, false},
		{"SVC_SCAN__DEVICES__RESOLVE_DNSSD=false", func(c *Config) any { return c.Scan.Devices.ResolveDNSSD }, false},
		{"SVC_SCAN__DEVICES__RESOLVE_SSDP=false", func(c *Config) any { return c.Scan.Devices.ResolveSSDP }, false},
		{"SVC_SCAN__PORTS__ENABLED=true", func(c *Config) any { return c.Scan.Ports.Enabled }, true},
		{"SVC_SCAN__PORTS__INTERVAL=12h", func(c *Config) any { return Duration(c.Scan.Ports.Interval) }, Duration(12 * time.Hour)},
		{"SVC_SCAN__PORTS__CUSTOM=22,80,8000-8100", func(c *Config) any { return c.Scan.Ports.Custom }, "22,80,8000-8100"},
		{"SVC_SCAN__PORTS__CONCURRENCY=8", func(c *Config) any { return c.Scan.Ports.Concurrency }, 8},
		// An instance named by a variable only; its name is lower-cased.
		{"SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD=hunter2", func(c *Config) any { return c.Plugins.RouterAPI["core"] },
			RouterAPI{EndpointConfig: sources.EndpointConfig{Port: 80, Timeout: time.Duration(defaultTimeout)}, Password: "hunter2"}},
		{"SVC_PLUGINS__ROUTERAPI__CORE__TOPOLOGY_ONLY=true", func(c *Config) any { return c.Plugins.RouterAPI["core"].TopologyOnly }, true},
		{"SVC_PLUGINS__RPCROUTER__OFFICE_AP__USER=ro", func(c *Config) any { return c.Plugins.RPCRouter["office_ap"].User }, "ro"},
		{"SVC_PLUGINS__FLOWLISTENER__EDGE__EXPORTERS=192.0.2.1,192.0.2.2", func(c *Config) any { return c.Plugins.FlowListener["edge"].Exporters },
			[]netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}},
		{"SVC_PLUGINS__FLOWLISTENER__EDGE__LISTEN=:9995", func(c *Config) any { return c.Plugins.FlowListener["edge"].Listen }, ":9995"},
		{"SVC_PLUGINS__DNSNODE__DNS1__TOKEN=tok", func(c *Config) any { return c.Plugins.DNSNode["dns1"].Token }, "tok"},
		{"SVC_PLUGINS__DNSNODE__DNS1__LOG_APP=Query Logs", func(c *Config) any { return c.Plugins.DNSNode["dns1"].LogApp }, "Query Logs"},
		{"SVC_PLUGINS__DNSNODE__DNS1__SSL=true", func(c *Config) any { return c.Plugins.DNSNode["dns1"].Port }, 53443},
		{"SVC_PLUGINS__DNSFILTER1__PI__INSECURE=true", func(c *Config) any { return c.Plugins.DNSFilter1["pi"].Insecure }, true},
		{"SVC_PLUGINS__DNSFILTER2__AG__TIMEOUT=30s", func(c *Config) any { return c.Plugins.DNSFilter2["ag"].Timeout }, 30 * time.Second},
		{"SVC_PLUGINS__DNSFILTER2__AG__PORT=3000", func(c *Config) any { return c.Plugins.DNSFilter2["ag"].Port }, 3000},
		{"SVC_NOTIFY__PHONE__ENABLED=false", func(c *Config) any { return c.Notify["phone"].Enabled }, false},
		{"SVC_NOTIFY__PHONE__TIMEOUT=5s", func(c *Config) any { return c.Notify["phone"].Timeout }, Duration(5 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			env := []string{tt.env}
			// Instances created from variables must be complete to load.
			switch {
			case strings.HasPrefix(tt.env, "SVC_NOTIFY__PHONE__"):
				env = append(env, "SVC_NOTIFY__PHONE__PUSH__URL=https://ntfy.example.com/t")
			case strings.Contains(tt.env, "__FLOWLISTENER__"):
			}
			c, err := Load("", env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tt.got(c), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvCoversEveryKey checks that every leaf key has a variable that sets
// it, derived from the schema, and that the variable is accepted.
func TestEnvCoversEveryKey(t *testing.T) {
	for _, p := range patterns() {
		f := fieldOf(p)
		if f == nil || !f.isLeaf() {
			continue
		}
		path := strings.ReplaceAll(p, "*", "x")
		name := envName(path)
		t.Run(name, func(t *testing.T) {
			l := newLoader("")
			c := Defaults()
			l.applyEnv([]string{name + "=" + sampleValue(f)}, &c)
			if len(l.problems) != 0 {
				t.Fatalf("%s rejected: %s", name, render(l.problems))
			}
			if o, ok := l.origins[path]; !ok || o.env != name {
				t.Errorf("%s did not set %s", name, path)
			}
		})
	}
}

func fieldOf(pattern string) *field {
	var found *field
	schema().walk(func(f *field) {
		if f.pattern == pattern {
			found = f
		}
	})
	return found
}

func sampleValue(f *field) string {
	switch f.kind {
	case kindInt:
		return "1"
	case kindBool:
		return "true"
	case kindDuration:
		return "1m"
	case kindPrefixes:
		return "10.0.0.0/8"
	case kindAddrs:
		return "10.0.0.1"
	}
	return "text"
}

func TestEnvOverridesFile(t *testing.T) {
	c := mustLoad(t, `
server:
  port: 8081
networks: [192.168.1.0/24]
plugins:
  routerapi:
    core:
      enabled: true
      host: 192.0.2.1
      password: from-file
notify:
  chat:
    http:
      url: https://chat.example.com/x
      body: hi
      headers:
        authorization: Bearer file
        Content-Type: text/plain
`,
		"SVC_SERVER__PORT=9000",
		"SVC_NETWORKS=10.0.0.0/24",
		"SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD=from-env",
		"SVC_NOTIFY__CHAT__HTTP__HEADERS__AUTHORIZATION=Bearer env",
		"SVC_NOTIFY__CHAT__HTTP__HEADERS__X_API_KEY=k",
		"SVC_CONFIG=/ignored.yaml",
		"OTHER_VAR=1",
		"SVC_SERVER__PORT=1", // a repeated name: the first wins, as with os.Getenv
	)
	if c.Server.Port != 9000 {
		t.Errorf("port %d, want 9000", c.Server.Port)
	}
	if len(c.Networks) != 1 || c.Networks[0].String() != "10.0.0.0/24" {
		t.Errorf("networks %v", c.Networks)
	}
	r := c.Plugins.RouterAPI["core"]
	if r.Password != "from-env" || r.Host != "192.0.2.1" || !r.Enabled {
		t.Errorf("routerapi %+v", r)
	}
	want := map[string]string{"Authorization": "Bearer env", "Content-Type": "text/plain", "X-Api-Key": "k"}
	if diff := cmp.Diff(want, c.Notify["chat"].HTTP.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestEnvProblems(t *testing.T) {
	tests := []struct{ env, key, msg string }{
		{"SVC_SERVER__PORT=0", "server.port", "from 1 to 65535, got 0"},
		{"SVC_SERVER__PORT=http", "server.port", `want a whole number, got "http"`},
		{"SVC_SERVER__PORT=99999999999999999999", "server.port", "far too large"},
		{"SVC_SERVER__MCP__ENABLED=yes", "server.mcp.enabled", `want true or false, got "yes"`},
		{"SVC_SCAN__DEVICES__WAIT=1.5s", "scan.devices.wait", "the smallest unit is s"},
		{"SVC_SCAN__DEVICES__RESOLVE_MDN=true", "scan.devices.resolve_mdn", "did you mean SVC_SCAN__DEVICES__RESOLVE_MDNS?"},
		{"SVC_SEVRER__PORT=1", "sevrer", "did you mean SVC_SERVER?"},
		{"SVC_SCAN_DEVICES_RATE=1", "scan_devices_rate", "not a setting"},
		{"SVC_SERVER=x", "server", "set one of its keys, e.g. SVC_SERVER__HOST"},
		{"SVC_SERVER__PORT__X=1", "server.port", "single value"},
		{"SVC_PLUGINS__ROUTERAPI__CORE=1", "plugins.routerapi", "name an instance and one of its keys"},
		{"SVC_SERVER__HOST=", "server.host", "got nothing"},
		{"SVC_PLUGINS__ROUTERAPI__CORE__ENABLED=true", "plugins.routerapi.core.host", "required when the instance is enabled"},
		{"SVC_PLUGINS__ROUTERAPI__BAD-__HOST=x", "plugins.routerapi.bad-", "bad name"},
		{"SVC_NETWORKS=10.0.0.0/24,lan", "networks[1]", `got "lan"`},
		{"SVC_NETWORKS=10.0.0.1/24", "networks[0]", "write the network 10.0.0.0/24"},
		{"SVC_NOTIFY__PHONE__PUSH__PRIORITY=6", "notify.phone.push.url", "required"},
		{"SVC_NOTIFY__PHONE__ENABLED=true", "notify.phone", "has no service block"},
		{"SVC_NOTIFY__CHAT__HTTP__HEADERS=x", "notify.chat.http.headers", "set one header per variable"},
		{"SVC_=1", "", "not a setting"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			_, err := Load("", []string{tt.env})
			if err == nil {
				t.Fatalf("accepted")
			}
			ps := err.(*Error).Problems
			name, _, _ := strings.Cut(tt.env, "=")
			p := findProblem(t, ps, tt.key)
			if p.Env != name || p.Line != 0 || !strings.Contains(p.Msg, tt.msg) {
				t.Errorf("got %s; want variable %s and message with %q", p, name, tt.msg)
			}
			if !strings.HasPrefix(p.String(), name+": ") {
				t.Errorf("rendered %q, want it to start with the variable", p.String())
			}
		})
	}
}

// TestEnvFileProblemPosition: a problem under a file section, caused by a
// variable, points at the variable when the variable set the key, and at
// the file's instance key when a required key is missing.
func TestEnvFileProblemPosition(t *testing.T) {
	ps := problems(t, "plugins:\n  routerapi:\n    core:\n      host: 192.0.2.1\n", "SVC_PLUGINS__ROUTERAPI__CORE__PORT=0", "SVC_PLUGINS__ROUTERAPI__OTHER__ENABLED=true")
	if p := findProblem(t, ps, "plugins.routerapi.core.port"); p.Env != "SVC_PLUGINS__ROUTERAPI__CORE__PORT" {
		t.Errorf("%s", p)
	}
	if p := findProblem(t, ps, "plugins.routerapi.other.host"); p.Env != "SVC_PLUGINS__ROUTERAPI__OTHER__ENABLED" {
		t.Errorf("%s", p)
	}
	ps = problems(t, "plugins:\n  routerapi:\n    core:\n      user: x\n", "SVC_PLUGINS__ROUTERAPI__CORE__ENABLED=true")
	if p := findProblem(t, ps, "plugins.routerapi.core.host"); p.Line != 3 || p.Env != "" {
		t.Errorf("%s", p)
	}
	// A list the variable replaces: its item's problem is the variable's,
	// not the line of the file's own item.
	ps = problems(t, "networks: [10.0.0.0/24]\n", "SVC_NETWORKS=10.0.0.1/24")
	if p := findProblem(t, ps, "networks[0]"); p.Env != "SVC_NETWORKS" || p.Line != 0 {
		t.Errorf("%s", p)
	}
}
