package config

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
	"github.com/google/go-cmp/cmp"
)

// TestSecretKeys pins the keys whose values are secret, so that a lost cfg
// tag fails a test.
func TestSecretKeys(t *testing.T) {
	var got []string
	schema().walk(func(f *field) {
		if f.secret {
			got = append(got, f.pattern)
		}
	})
	want := []string{
		"plugins.routerapi.*.password",
		"plugins.rpcrouter.*.password",
		"plugins.dnsnode.*.token",
		"plugins.dnsfilter1.*.password",
		"plugins.dnsfilter2.*.password",
		"notify.*.push.token",
		"notify.*.webhook.secret",
		"notify.*.http.url",
		"notify.*.http.headers",
		"sensors.nats.password",
		"sensors.nats.embedded.password",
		"sensors.nats.embedded.sensors.*.password",
		"sensor.nats.password",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret keys (-want +got):\n%s", diff)
	}
}

const secretsYAML = `
plugins:
  routerapi:
    r: {host: 192.0.2.1, user: admin-user, password: "pw-routerapi-1"}
  rpcrouter:
    r: {host: 192.0.2.2, password: "pw-rpcrouter-2"}
  dnsnode:
    d: {host: 192.0.2.3, token: "tok-dnsnode-3"}
  dnsfilter1:
    f: {host: 192.0.2.4, password: "pw-dnsfilter1-4"}
  dnsfilter2:
    f: {host: 192.0.2.5, password: "pw-dnsfilter2-5"}
notify:
  p:
    push:
      url: "https://alice:pw-pushurl-6@ntfy.example.com/topic?auth=q-pushquery-7"
      token: "tok-push-8"
  w:
    webhook:
      url: "https://hooks.example.com/in?sig=q-webhookquery-9#frag-webhook-10"
      secret: "whsec_c2VjcmV0LXdlYmhvb2stMTE="
  h:
    http:
      url: "https://chat.example.com/hooks/path-httpurl-12?token=q-httpurl-13"
      headers:
        Authorization: "Bearer hdr-auth-14"
        X-Api-Key: "hdr-key-15"
      body: '{"t": {{json .Summary}}}'
sensors:
  nats:
    embedded:
      user: shared
      password: "pw-embedded-17"
      sensors:
        site-a: {password: "pw-sensor-18"}
`

var secretValues = []string{
	"pw-routerapi-1", "pw-rpcrouter-2", "tok-dnsnode-3", "pw-dnsfilter1-4", "pw-dnsfilter2-5",
	"pw-pushurl-6", "q-pushquery-7", "tok-push-8", "q-webhookquery-9", "frag-webhook-10",
	"c2VjcmV0LXdlYmhvb2stMTE", "path-httpurl-12", "q-httpurl-13", "hdr-auth-14", "hdr-key-15",
	"pw-env-16", "/topic", "/in", "alice", "pw-embedded-17", "pw-sensor-18",
}

func TestRedaction(t *testing.T) {
	c := mustLoad(t, secretsYAML, "SVC_PLUGINS__ROUTERAPI__ENVONLY__PASSWORD=pw-env-16")
	_ = c.Redacted() // must not change c
	for name, render := range map[string]func() []byte{
		"YAML":            func() []byte { b, _ := c.YAML(); return b },
		"Redacted().YAML": func() []byte { b, _ := c.Redacted().YAML(); return b },
	} {
		t.Run(name, func(t *testing.T) {
			out := string(render())
			for _, s := range secretValues {
				if strings.Contains(out, s) {
					t.Errorf("output contains secret %q:\n%s", s, out)
				}
			}
			for _, keep := range []string{"admin-user", "192.0.2.5", "https://ntfy.example.com/[redacted]",
				"https://hooks.example.com/[redacted]", `body: "{\"t\": {{json .Summary}}}"`, "Authorization:", "X-Api-Key:"} {
				if !strings.Contains(out, keep) {
					t.Errorf("output lacks %q:\n%s", keep, out)
				}
			}
			if n := strings.Count(out, `"[redacted]"`); n != 13 {
				t.Errorf("%d quoted [redacted] values, want 13:\n%s", n, out)
			}
		})
	}
	// The original keeps its secrets: Redacted copies deeply.
	if c.Plugins.RouterAPI["r"].Password != "pw-routerapi-1" || c.Notify["h"].HTTP.Headers["X-Api-Key"] != "hdr-key-15" ||
		c.Notify["h"].HTTP.URL == RedactedText || c.Notify["p"].Push.Token != "tok-push-8" {
		t.Errorf("Redacted changed the original: %+v", c.Notify)
	}
	// Empty secrets stay empty.
	r := mustLoad(t, "plugins:\n  routerapi:\n    r: {host: x}\n").Redacted()
	if r.Plugins.RouterAPI["r"].Password != "" {
		t.Errorf("empty password became %q", r.Plugins.RouterAPI["r"].Password)
	}
}

// TestShowRoundTrip: config show output (with no secrets set) loads back to
// the same configuration.
func TestShowRoundTrip(t *testing.T) {
	c := mustLoad(t, `
server: {host: "::", trusted_proxies: [10.0.0.1], cors: {allowed_origins: ["https://a.example"]}}
networks: [192.168.1.0/24, "fd00::/104"]
scan: {source: "sweep: odd # name", ports: {custom: "22,80"}}
location: {country: "no", timezone: UTC}
plugins:
  flowlistener:
    f: {enabled: true, exporters: [192.0.2.1], listen: "[::]:2055"}
  dnsnode:
    d: {host: dns.lan, log_app: "Query Logs (Sqlite)"}
notify:
  p:
    push: {url: "https://ntfy.example.com", priority: 3} # a topic path counts as a secret: see TestRedactURL
`)
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back := mustLoad(t, string(out))
	if diff := cmp.Diff(c, back, cmpNet...); diff != "" {
		t.Errorf("config show does not load back (-want +got):\n%s\n%s", diff, out)
	}
}

func TestQuoteString(t *testing.T) {
	for _, s := range []string{"", "x", "true", "no", "Off", "null", "~", "123", "0x1F", "1e3", "1_000", ".inf", "-", "- x",
		"a: b", "a #b", "#x", "@x", "`x", "[x]", "{x}", "*x", "&x", "!x", "%x", "|x", ">x", "'x", `"x`, "x ", " x",
		"sweep:host", "https://a.example/x?y=1", "a\nb", "tab\there", "ünïcode", "\x01\x7f", "12:30", "2001-01-01",
		":2055", "0o17", "x\u2028y", "\\back"} {
		t.Run(s, func(t *testing.T) {
			src := "k: " + quoteString(s) + "\n"
			f, err := parser.ParseBytes([]byte(src), 0)
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			es, _ := newLoader("").entries(f.Docs[0].Body, "")
			sc, ok := yamlScalar(es[0].value, false)
			if !ok || (sc.kind != scalarPlain && sc.kind != scalarQuoted) || sc.text != s {
				t.Errorf("%q reads back as %q (kind %d)", src, sc.text, sc.kind)
			}
		})
	}
}

var cmpNet = []cmp.Option{
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://ntfy.sh/my-secret-topic":                        "https://ntfy.sh/[redacted]",
		"https://hooks.slack.com/services/T00/B00/XXXXXXXX":      "https://hooks.slack.com/[redacted]",
		"https://user:pw@push.example:8443/t?auth=x#f":           "https://push.example:8443/[redacted]",
		"https://push.example:8443":                              "https://push.example:8443",
		"https://push.example/":                                  "https://push.example/",
		"http://192.0.2.9:8080/hook":                             "http://192.0.2.9:8080/[redacted]",
		"https://push.example/[redacted]":                        "https://push.example/[redacted]",
		"not a url at all":                                       RedactedText,
		"https://[::1]:9/x":                                      "https://[::1]:9/[redacted]",
		"https://discord.com/api/webhooks/123/tokentokentoken?x": "https://discord.com/[redacted]",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
		if got := redactURL(redactURL(in)); got != redactURL(in) {
			t.Errorf("redacting %q twice gives %q", in, got)
		}
	}
}
