package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
)

func corsHeaderNames(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

func TestCORS(t *testing.T) {
	const listed, unlisted = "https://dash.example.com", "https://evil.example.com"
	preflight := func(origin string) []reqOpt {
		return []reqOpt{header("Origin", origin), header("Access-Control-Request-Method", "PATCH"),
			header("Access-Control-Request-Headers", "authorization, content-type")}
	}
	t.Run("empty list sends no CORS headers", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("GET", "/api/devices", "", bearer(tokRead), header("Origin", listed))
		wantStatus(t, resp, body, 200)
		if got := corsHeaderNames(resp.Header); len(got) != 0 || resp.Header.Get("Vary") != "" {
			t.Fatalf("CORS headers %v, Vary %q", got, resp.Header.Get("Vary"))
		}
		resp, body = e.do("OPTIONS", "/api/devices", "", preflight(listed)...)
		wantProblem(t, resp, body, 405, "method-not-allowed")
		if got := corsHeaderNames(resp.Header); len(got) != 0 {
			t.Fatalf("CORS headers on a preflight with an empty list: %v", got)
		}
	})
	t.Run("listed origin", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{CORSOrigins: []string{"http://localhost:3000", listed}})
		resp, body := e.do("GET", "/api/devices", "", bearer(tokRead), header("Origin", listed))
		wantStatus(t, resp, body, 200)
		if resp.Header.Get("Access-Control-Allow-Origin") != listed || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
			t.Fatalf("headers %v", resp.Header)
		}
		if resp.Header.Get("Vary") != "Origin" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("headers %v", resp.Header)
		}
		// Errors carry the headers too, so a page can read them.
		resp, body = e.do("GET", "/api/devices", "", header("Origin", listed))
		wantProblem(t, resp, body, 401, "token-missing")
		if resp.Header.Get("Access-Control-Allow-Origin") != listed {
			t.Fatalf("401 without CORS headers: %v", resp.Header)
		}
		resp, body = e.do("OPTIONS", "/api/devices/dev-nas", "", preflight(listed)...)
		wantStatus(t, resp, body, 204)
		want := map[string]string{
			"Access-Control-Allow-Origin":  listed,
			"Access-Control-Allow-Methods": "GET, HEAD, PATCH",
			"Access-Control-Allow-Headers": "Authorization, Content-Type, X-Request-Id",
			"Access-Control-Max-Age":       "600",
		}
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Fatalf("%s %q, want %q", k, got, v)
			}
		}
		if len(body) != 0 {
			t.Fatal("preflight with a body")
		}
	})
	t.Run("unlisted origin", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{CORSOrigins: []string{listed}})
		for _, origin := range []string{unlisted, "https://dash.example.com:443", "https://DASH.example.com", "null"} {
			resp, body := e.do("GET", "/api/devices", "", bearer(tokRead), header("Origin", origin))
			wantStatus(t, resp, body, 200)
			if got := corsHeaderNames(resp.Header); len(got) != 0 {
				t.Fatalf("origin %q got CORS headers %v", origin, got)
			}
			resp, body = e.do("OPTIONS", "/api/devices", "", preflight(origin)...)
			wantProblem(t, resp, body, 405, "method-not-allowed")
			if got := corsHeaderNames(resp.Header); len(got) != 0 {
				t.Fatalf("origin %q preflight got CORS headers %v", origin, got)
			}
		}
	})
	t.Run("only /api", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{CORSOrigins: []string{listed}})
		resp, body := e.do("GET", "/mcp", "", header("Origin", listed))
		wantProblem(t, resp, body, 404, "not-found")
		if got := corsHeaderNames(resp.Header); len(got) != 0 {
			t.Fatalf("CORS headers outside /api: %v", got)
		}
	})
}

func TestTrustedProxies(t *testing.T) {
	proxies, err := httpapi.ParseTrustedProxies([]string{"10.0.0.1", "172.16.0.0/12", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		proxy  string // server.proxy_header; "" is the default, x-forwarded-for
		peer   string
		header []string // name, value pairs
		want   string
	}{
		{"no header", "", "10.0.0.1:4000", nil, "10.0.0.1"},
		{"XFF from trusted proxy", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"XFF from untrusted peer ignored", "", "192.0.2.50:4000", []string{"X-Forwarded-For", "203.0.113.9"}, "192.0.2.50"},
		{"XFF chain skips trusted hops", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "198.51.100.1, 203.0.113.9, 172.16.5.5"}, "203.0.113.9"},
		{"XFF spoofed left part ignored", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		{"XFF in two fields", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "198.51.100.1", "X-Forwarded-For", "172.16.0.9"}, "198.51.100.1"},
		{"XFF all trusted", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "172.16.0.9"}, "172.16.0.9"},
		{"XFF garbage stops at trusted hop", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "203.0.113.9, nonsense"}, "10.0.0.1"},
		{"XFF with port", "", "10.0.0.1:4000", []string{"X-Forwarded-For", "203.0.113.9:5555"}, "203.0.113.9"},
		{"XFF IPv6", "", "[fd00::1]:4000", []string{"X-Forwarded-For", "2001:db8::7"}, "2001:db8::7"},
		{"Forwarded", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for=203.0.113.9;proto=https;by=10.0.0.1`}, "203.0.113.9"},
		{"Forwarded IPv6 quoted with port", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"Forwarded chain", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for=198.51.100.1, for=203.0.113.9, for=172.16.1.1`}, "203.0.113.9"},
		{"Forwarded unknown stops", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for=unknown`}, "10.0.0.1"},
		{"Forwarded malformed ignored", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for="203.0.113.9`}, "10.0.0.1"},
		{"Forwarded from untrusted peer ignored", "forwarded", "192.0.2.50:4000", []string{"Forwarded", `for=203.0.113.9`}, "192.0.2.50"},
		{"IPv4-mapped peer", "", "[::ffff:10.0.0.1]:4000", []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		// A client behind a proxy that appends to X-Forwarded-For sends its
		// own Forwarded (or X-Real-IP): only the configured header counts.
		{"forged Forwarded ignored by default", "", "10.0.0.1:4000", []string{"Forwarded", `for=1.2.3.4`, "X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"forged X-Real-IP ignored by default", "", "10.0.0.1:4000", []string{"X-Real-Ip", "1.2.3.4", "X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"XFF ignored when Forwarded is configured", "forwarded", "10.0.0.1:4000", []string{"Forwarded", `for=203.0.113.9`, "X-Forwarded-For", "1.2.3.4"}, "203.0.113.9"},
		{"X-Real-IP", "x-real-ip", "10.0.0.1:4000", []string{"X-Real-Ip", "203.0.113.9", "X-Forwarded-For", "1.2.3.4"}, "203.0.113.9"},
		{"X-Real-IP last value is the proxy's", "x-real-ip", "10.0.0.1:4000", []string{"X-Real-Ip", "1.2.3.4", "X-Real-Ip", "203.0.113.9"}, "203.0.113.9"},
		{"X-Real-IP from untrusted peer ignored", "x-real-ip", "192.0.2.50:4000", []string{"X-Real-Ip", "203.0.113.9"}, "192.0.2.50"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotRemote string
			ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotRemote = r.RemoteAddr
				w.WriteHeader(http.StatusNoContent)
			})
			e := newEnv(t, httpapi.Config{TrustedProxies: proxies, ProxyHeader: tc.proxy, UI: ui})
			opts := []reqOpt{remote(tc.peer)}
			for i := 0; i+1 < len(tc.header); i += 2 {
				opts = append(opts, header(tc.header[i], tc.header[i+1]))
			}
			resp, body := e.do("GET", "/api/livez", "", opts...)
			wantStatus(t, resp, body, 200)
			if got := e.accessLine()["client"]; got != tc.want {
				t.Fatalf("client %v, want %s", got, tc.want)
			}
			// The UI sees the resolved client in RemoteAddr.
			e.do("GET", "/page", "", opts...)
			ap, err := netip.ParseAddrPort(gotRemote)
			if err != nil || ap.Addr().Unmap().String() != tc.want {
				t.Fatalf("UI RemoteAddr %q, want address %s", gotRemote, tc.want)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	t.Run("echoed", func(t *testing.T) {
		resp, body := e.do("GET", "/api/nothing", "", header("X-Request-Id", "abc-123.x_y:z"))
		p := wantProblem(t, resp, body, 404, "not-found")
		if resp.Header.Get("X-Request-Id") != "abc-123.x_y:z" || p.RequestID != "abc-123.x_y:z" {
			t.Fatalf("header %q, problem %q", resp.Header.Get("X-Request-Id"), p.RequestID)
		}
		if e.accessLine()["request_id"] != "abc-123.x_y:z" {
			t.Fatal("access log lacks the request id")
		}
	})
	for _, bad := range []string{"", "has space", strings.Repeat("a", 129), "new\nline", `quote"`} {
		t.Run("replaced "+bad, func(t *testing.T) {
			resp, body := e.do("GET", "/api/livez", "", header("X-Request-Id", bad))
			wantStatus(t, resp, body, 200)
			if got := resp.Header.Get("X-Request-Id"); got == bad || got == "" {
				t.Fatalf("X-Request-Id %q", got)
			}
		})
	}
	t.Run("unique", func(t *testing.T) {
		r1, _ := e.do("GET", "/api/livez", "")
		r2, _ := e.do("GET", "/api/livez", "")
		if r1.Header.Get("X-Request-Id") == r2.Header.Get("X-Request-Id") {
			t.Fatal("two requests got the same id")
		}
	})
	t.Run("in the request's logger", func(t *testing.T) {
		ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			zerolog.Ctx(r.Context()).Warn().Str("page", r.URL.Path).Msg("ui page")
		})
		e := newEnv(t, httpapi.Config{UI: ui})
		for _, id := range []string{"first-id", "second-id"} {
			resp, body := e.do("GET", "/devices", "", header("X-Request-Id", id))
			wantStatus(t, resp, body, 200)
		}
		var got []string
		for _, l := range e.logLines() {
			if l["message"] == "ui page" {
				got = append(got, fmt.Sprint(l["request_id"], " ", l["page"], " ", l["level"]))
			}
		}
		if want := []string{"first-id /devices warn", "second-id /devices warn"}; !slices.Equal(got, want) {
			t.Fatalf("UI log lines %q, want %q", got, want)
		}
	})
}

func TestAccessLog(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("PATCH", "/api/devices/dev-nas?session=s3cr3tqu3ry", `{"label":"x"}`, bearer(tokWrite), remote("192.0.2.33:999"))
	wantProblem(t, resp, body, 400, "invalid-query")
	resp, body = e.do("GET", "/api/devices/dev-nas", "", bearer(tokRead), remote("192.0.2.33:999"))
	wantStatus(t, resp, body, 200)
	okID, okBody := resp.Header.Get("X-Request-Id"), body
	resp, body = e.do("GET", "/api/devices", "", bearer(tokExpired))
	wantStatus(t, resp, body, 401)
	logs := e.logs.String()
	for _, secret := range []string{tokWrite, tokRead, tokExpired, "s3cr3tqu3ry", "Bearer", "Authorization"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the log contains %q:\n%s", secret, logs)
		}
	}
	var lines []map[string]any
	for _, l := range e.logLines() {
		if l["message"] == "http request" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d access lines, want 3:\n%s", len(lines), logs)
	}
	got := lines[1]
	for k, want := range map[string]any{
		"method": "GET", "path": "/api/devices/dev-nas", "status": float64(200), "client": "192.0.2.33",
		"token_id": "t-read", "request_id": okID, "level": "info",
	} {
		if got[k] != want {
			t.Fatalf("access log %s = %v, want %v (line %v)", k, got[k], want, got)
		}
	}
	if got["bytes"].(float64) != float64(len(okBody)) {
		t.Fatalf("bytes %v, want %d", got["bytes"], len(okBody))
	}
	if _, ok := got["duration_ms"].(float64); !ok {
		t.Fatalf("no duration_ms in %v", got)
	}
	if lines[0]["path"] != "/api/devices/dev-nas" {
		t.Fatalf("path %v", lines[0]["path"])
	}
}

func TestMountedHandlers(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<p>ui " + r.URL.Path + "</p>"))
	})
	var mcpPrincipal string
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := httpapi.PrincipalFromContext(r.Context())
		if !ok {
			t.Error("MCP request without principal")
		}
		mcpPrincipal = p.Name
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0"}`))
	})
	t.Run("UI outside /api", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{UI: ui})
		resp, body := e.do("GET", "/devices/dev-nas", "")
		if resp.StatusCode != 200 || string(body) != "<p>ui /devices/dev-nas</p>" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		resp, body = e.do("POST", "/", "")
		if resp.StatusCode != 200 {
			t.Fatalf("UI did not get POST /: %d %s", resp.StatusCode, body)
		}
		resp, body = e.do("GET", "/api/nothing", "")
		wantProblem(t, resp, body, 404, "not-found")
		resp, body = e.do("DELETE", "/api/devices/dev-nas", "")
		wantProblem(t, resp, body, 405, "method-not-allowed")
		resp, body = e.do("GET", "/mcp", "")
		if p := wantProblem(t, resp, body, 404, "not-found"); !strings.Contains(p.Detail, "set server.mcp.enabled to true") {
			t.Fatalf("detail %q does not say how to turn MCP on", p.Detail)
		}
	})
	t.Run("MCP enabled", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{MCPEnabled: true, MCP: mcp, UI: ui})
		resp, body := e.do("POST", "/mcp", `{}`)
		wantProblem(t, resp, body, 401, "token-missing")
		resp, body = e.do("POST", "/mcp", `{}`, bearer(tokRead))
		if resp.StatusCode != 200 || mcpPrincipal != "dashboard" {
			t.Fatalf("%d %s, principal %q", resp.StatusCode, body, mcpPrincipal)
		}
		resp, body = e.do("DELETE", "/mcp", "", bearer(tokExpired))
		wantProblem(t, resp, body, 401, "token-invalid")
		// A body over 1 MiB is refused before the MCP server reads it.
		resp, body = e.do("POST", "/mcp", `{"x":"`+strings.Repeat("a", 2<<20)+`"}`, bearer(tokRead))
		wantProblem(t, resp, body, 413, "body-too-large")
	})
	t.Run("MCP enabled without handler", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{MCPEnabled: true})
		resp, body := e.do("POST", "/mcp", `{}`, bearer(tokRead))
		if p := wantProblem(t, resp, body, 404, "not-found"); strings.Contains(p.Detail, "set server.mcp.enabled to true") {
			t.Fatalf("detail %q tells to enable what is enabled", p.Detail)
		}
	})
	t.Run("MCP handler but disabled", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{MCP: mcp})
		resp, body := e.do("POST", "/mcp", `{}`, bearer(tokRead))
		wantProblem(t, resp, body, 404, "not-found")
	})
}

func TestConfig(t *testing.T) {
	deps := httpapi.Deps{Inventory: newFakeInventory(), Commander: &fakeCommander{}, Auth: &fakeAuth{}, Ready: &fakeReady{}}
	bad := []struct {
		name string
		cfg  httpapi.Config
		key  string
	}{
		{"origin with path", httpapi.Config{CORSOrigins: []string{"https://a.example/"}}, "server.cors.allowed_origins[0]"},
		{"origin without scheme", httpapi.Config{CORSOrigins: []string{"a.example"}}, "server.cors.allowed_origins[0]"},
		{"origin wildcard", httpapi.Config{CORSOrigins: []string{"https://ok.example", "https://*.example"}}, "server.cors.allowed_origins[1]"},
		{"origin upper case", httpapi.Config{CORSOrigins: []string{"https://A.example"}}, "server.cors.allowed_origins[0]"},
		{"origin star", httpapi.Config{CORSOrigins: []string{"*"}}, "server.cors.allowed_origins[0]"},
		{"zero prefix", httpapi.Config{TrustedProxies: []netip.Prefix{{}}}, "server.trusted_proxies[0]"},
		{"negative rate", httpapi.Config{TokenRate: -1}, "token rate limit"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpapi.New(tc.cfg, deps)
			if !errors.Is(err, httpapi.ErrConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("New: %v, want ErrConfig naming %s", err, tc.key)
			}
		})
	}
	t.Run("missing dependency", func(t *testing.T) {
		d := deps
		d.Ready = nil
		if _, err := httpapi.New(httpapi.Config{}, d); !errors.Is(err, httpapi.ErrDeps) || !strings.Contains(err.Error(), "Ready") {
			t.Fatalf("New: %v", err)
		}
	})
	t.Run("trusted proxies", func(t *testing.T) {
		got, err := httpapi.ParseTrustedProxies([]string{"10.0.0.1", "10.1.2.3/8", "::ffff:192.168.0.0/112", "2001:db8::1"})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"10.0.0.1/32", "10.0.0.0/8", "192.168.0.0/16", "2001:db8::1/128"}
		for i := range want {
			if got[i].String() != want[i] {
				t.Fatalf("prefix %d = %s, want %s", i, got[i], want[i])
			}
		}
		for _, s := range []string{"10.0.0.256", "lan", "10.0.0.0/33", "fe80::1%eth0", "::ffff:0:0/80"} {
			if _, err := httpapi.ParseTrustedProxies([]string{"10.0.0.1", s}); !errors.Is(err, httpapi.ErrConfig) || !strings.Contains(err.Error(), "server.trusted_proxies[1]") {
				t.Fatalf("%q: %v", s, err)
			}
		}
	})
}

func TestSecurityHeadersOnEveryPath(t *testing.T) {
	pageCSP := "default-src 'self'"
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Security-Policy", pageCSP) // a page sets its own
		}
		w.WriteHeader(http.StatusOK)
	})
	for _, withUI := range []bool{false, true} {
		cfg := httpapi.Config{}
		if withUI {
			cfg.UI = ui
		}
		e := newEnv(t, cfg)
		for _, path := range []string{"/api/livez", "/api/devices", "/api/nothing", "/mcp", "/", "/anything/else", "/page"} {
			resp, body := e.do("GET", path, "")
			h := resp.Header
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("ui %v %s: headers %v (%s)", withUI, path, h, body)
			}
			wantCSP := httpapi.APICSP
			if withUI && path == "/page" {
				wantCSP = pageCSP
			}
			if got := h.Get("Content-Security-Policy"); got != wantCSP {
				t.Errorf("ui %v %s: CSP %q, want %q", withUI, path, got, wantCSP)
			}
			if wantNoStore := strings.HasPrefix(path, "/api"); (h.Get("Cache-Control") == "no-store") != wantNoStore {
				t.Errorf("ui %v %s: Cache-Control %q", withUI, path, h.Get("Cache-Control"))
			}
		}
	}
}

func TestAllowedHosts(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	e := newEnv(t, httpapi.Config{UI: ui, AllowedHosts: []string{"jocasta.lan", "192.0.2.10", "[fd00::10]"}})
	tests := []struct {
		host, path string
		want       int
	}{
		{"jocasta.lan", "/", 200},
		{"JOCASTA.lan:8080", "/devices", 200},
		{"192.0.2.10:8080", "/", 200},
		{"[fd00::10]:8080", "/", 200},
		{"attacker.example", "/", 421},
		{"attacker.example:8080", "/devices", 421},
		// Tokens, not cookies, guard /api and /mcp: no Host check there.
		{"attacker.example", "/api/livez", 200},
	}
	for _, tc := range tests {
		resp, body := e.do("GET", tc.path, "", func(r *http.Request) { r.Host = tc.host })
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s %s: %d, want %d (%s)", tc.host, tc.path, resp.StatusCode, tc.want, body)
		}
		if tc.want == 421 && !strings.Contains(string(body), "misdirected-request") {
			t.Errorf("Host %s: body %s", tc.host, body)
		}
	}
	// Without the list, any Host is served.
	open := newEnv(t, httpapi.Config{UI: ui})
	resp, body := open.do("GET", "/", "", func(r *http.Request) { r.Host = "anything.example" })
	wantStatus(t, resp, body, 200)
}
