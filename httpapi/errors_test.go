package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
)

type opAccess int

const (
	public opAccess = iota
	read
	write
)

// operation is one documented operation with a request that succeeds.
type operation struct {
	id     string
	method string
	path   string // with a known device
	body   string
	access opAccess
	device bool // has {id}
}

var operations = []operation{
	{"getLivez", "GET", "/api/livez", "", public, false},
	{"getReadyz", "GET", "/api/readyz", "", public, false},
	{"getOpenAPI", "GET", "/api/openapi.json", "", public, false},
	{"getStats", "GET", "/api/stats", "", read, false},
	{"listGroups", "GET", "/api/groups", "", read, false},
	{"listDevices", "GET", "/api/devices", "", read, false},
	{"getDevice", "GET", "/api/devices/dev-nas", "", read, true},
	{"editDevice", "PATCH", "/api/devices/dev-nas", `{"label":"x"}`, write, true},
	{"setWatch", "PATCH", "/api/devices/dev-nas/watch", `{"watched":true}`, write, true},
	{"mergeDevice", "POST", "/api/devices/dev-nas/merge", `{"device":"dev-phone"}`, write, true},
	{"unmergeDevice", "POST", "/api/devices/dev-nas/unmerge", `{"device":"dev-phone"}`, write, true},
	{"listDeviceEvents", "GET", "/api/devices/dev-nas/events", "", read, true},
	{"getDeviceTraffic", "GET", "/api/devices/dev-nas/traffic", "", read, true},
	{"getDeviceTimeline", "GET", "/api/devices/dev-nas/timeline", "", read, true},
	{"getDeviceDNS", "GET", "/api/devices/dev-nas/dns", "", read, true},
	{"getTraffic", "GET", "/api/traffic", "", read, false},
	{"listEvents", "GET", "/api/events", "", read, false},
	{"listScans", "GET", "/api/scans", "", read, false},
}

func (o operation) token() reqOpt {
	if o.access == write {
		return bearer(tokWrite)
	}
	return bearer(tokRead)
}

// TestEveryOperation provokes each error status every operation
// documents, through the whole middleware chain.
func TestEveryOperation(t *testing.T) {
	for _, o := range operations {
		t.Run(o.id, func(t *testing.T) {
			t.Run("400 unknown query parameter", func(t *testing.T) {
				e := newEnv(t, httpapi.Config{})
				resp, body := e.do(o.method, o.path+"?bogus=1", o.body, o.token())
				p := wantProblem(t, resp, body, 400, "invalid-query")
				if len(p.Errors) != 1 || p.Errors[0].Parameter != "bogus" || !strings.Contains(p.Detail, `"bogus"`) {
					t.Fatalf("problem %+v", p)
				}
			})
			t.Run("429 client rate", func(t *testing.T) {
				e := newEnv(t, httpapi.Config{ClientRate: 0.001, ClientBurst: 1})
				resp, body := e.do(o.method, o.path, o.body, o.token())
				if resp.StatusCode >= 400 && o.id != "getDeviceTraffic" && o.id != "getDeviceDNS" {
					t.Fatalf("first request: %d %s", resp.StatusCode, body)
				}
				resp, body = e.do(o.method, o.path, o.body, o.token())
				wantProblem(t, resp, body, 429, "rate-limited")
				if got := resp.Header.Get("Retry-After"); got != "1000" {
					t.Fatalf("Retry-After %q, want 1000 (1 request per 1000 s)", got)
				}
			})
			if o.id != "getLivez" && o.id != "getOpenAPI" {
				t.Run("500 internal", func(t *testing.T) {
					e := newEnv(t, httpapi.Config{})
					e.inv.fail, e.cmd.fail, e.ready.panic = true, true, true
					resp, body := e.do(o.method, o.path, o.body, o.token())
					p := wantProblem(t, resp, body, 500, "internal")
					if strings.Contains(string(body), "bbolt") || strings.Contains(string(body), "secret-path") || len(p.Errors) != 0 {
						t.Fatalf("500 leaks internals: %s", body)
					}
					if p.RequestID == "" || p.RequestID != resp.Header.Get("X-Request-Id") {
						t.Fatalf("500 request_id %q, header %q", p.RequestID, resp.Header.Get("X-Request-Id"))
					}
					if !strings.Contains(e.logs.String(), "secret-path") || !strings.Contains(e.logs.String(), p.RequestID) {
						t.Fatalf("the cause is not logged with the request id: %s", e.logs.String())
					}
				})
			}
			if o.access == public {
				return
			}
			t.Run("401 no token", func(t *testing.T) {
				e := newEnv(t, httpapi.Config{})
				resp, body := e.do(o.method, o.path, o.body)
				wantProblem(t, resp, body, 401, "token-missing")
			})
			if o.access == write {
				t.Run("403 read token", func(t *testing.T) {
					e := newEnv(t, httpapi.Config{})
					resp, body := e.do(o.method, o.path, o.body, bearer(tokRead))
					wantProblem(t, resp, body, 403, "read-only-token")
					if e.cmd.edit != nil || e.cmd.watched != nil {
						t.Fatal("a read token changed a device")
					}
				})
				t.Run("413 body too large", func(t *testing.T) {
					e := newEnv(t, httpapi.Config{})
					resp, body := e.do(o.method, o.path, strings.Repeat(" ", 64<<10+1), o.token())
					wantProblem(t, resp, body, 413, "body-too-large")
				})
				t.Run("415 content type", func(t *testing.T) {
					e := newEnv(t, httpapi.Config{})
					resp, body := e.do(o.method, o.path, o.body, o.token(), contentType("text/plain"))
					wantProblem(t, resp, body, 415, "unsupported-media-type")
				})
			}
			if o.device {
				t.Run("404 unknown device", func(t *testing.T) {
					e := newEnv(t, httpapi.Config{})
					path := strings.Replace(o.path, "dev-nas", "dev-gone", 1)
					resp, body := e.do(o.method, path, o.body, o.token())
					p := wantProblem(t, resp, body, 404, "device-not-found")
					if !strings.Contains(p.Detail, `"dev-gone"`) {
						t.Fatalf("detail %q does not name the id", p.Detail)
					}
				})
			}
		})
	}
}

func TestUnauthorized(t *testing.T) {
	const invalid = `Bearer realm="jocasta", error="invalid_token"`
	tests := []struct {
		name       string
		headers    []string // Authorization values
		slug       string
		challenge  string
		authCalled bool
	}{
		{"no header", nil, "token-missing", invalid, false},
		{"wrong scheme", []string{"Basic dXNlcjpwYXNz"}, "token-invalid", invalid, false},
		{"scheme only", []string{"Bearer"}, "token-invalid", invalid, false},
		{"empty header", []string{""}, "token-invalid", invalid, false},
		{"two spaces", []string{"Bearer  " + tokRead}, "token-invalid", invalid, false},
		{"trailing text", []string{"Bearer " + tokRead + " x"}, "token-invalid", invalid, false},
		{"not token68", []string{"Bearer jct_ä"}, "token-invalid", invalid, false},
		{"two headers", []string{"Bearer " + tokRead, "Bearer " + tokRead}, "token-invalid", invalid, false},
		{"unknown", []string{"Bearer jct_Unkn0wnUnkn0wnUnkn0wnUnkn0wnUnkn0wnUnkn0wn"}, "token-invalid", invalid, true},
		{"expired", []string{"Bearer " + tokExpired}, "token-invalid", invalid, true},
		{"revoked", []string{"Bearer " + tokRevoked}, "token-invalid", invalid, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			opts := []reqOpt{}
			for _, h := range tc.headers {
				opts = append(opts, header("Authorization", h))
			}
			resp, body := e.do("GET", "/api/devices", "", opts...)
			wantProblem(t, resp, body, 401, tc.slug)
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if called := e.auth.callCount() > 0; called != tc.authCalled {
				t.Fatalf("Authenticator called: %v, want %v", called, tc.authCalled)
			}
		})
	}
	t.Run("scheme is case-insensitive", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("GET", "/api/devices", "", authz("bEaReR "+tokRead))
		wantStatus(t, resp, body, 200)
		if e.auth.last != tokRead {
			t.Fatalf("Authenticator got %q", e.auth.last)
		}
	})
	t.Run("authenticator failure is 500", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("GET", "/api/devices", "", bearer(tokBroken))
		wantProblem(t, resp, body, 500, "internal")
	})
}

func TestNotFound(t *testing.T) {
	tests := []struct {
		path, slug, detail string
	}{
		{"/api/nothing", "not-found", "/api/openapi.json"},
		{"/api", "not-found", "/api/openapi.json"},
		{"/api/devices/", "not-found", "/api/openapi.json"},
		{"/api/devices/dev-nas/", "not-found", "/api/openapi.json"},
		{"/api//devices", "not-found", "/api/openapi.json"},
		{"/api/devices/dev-nas/extra/x", "not-found", "/api/openapi.json"},
		{"/elsewhere", "not-found", "no resource"},
		{"/mcp", "not-found", "server.mcp.enabled"},
		{"/mcp/session", "not-found", "server.mcp.enabled"},
		{"/api/devices/bad$id", "device-not-found", `"bad$id"`},
		{"/api/devices/" + strings.Repeat("a", 257), "device-not-found", "no device"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do("GET", tc.path, "", bearer(tokRead))
			p := wantProblem(t, resp, body, 404, tc.slug)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("detail %q, want it to mention %q", p.Detail, tc.detail)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	tests := []struct {
		method, path, allow string
	}{
		{"DELETE", "/api/devices/dev-nas", "GET, HEAD, PATCH"},
		{"POST", "/api/livez", "GET, HEAD"},
		{"PATCH", "/api/devices", "GET, HEAD"},
		{"PUT", "/api/devices/dev-nas/watch", "PATCH"},
		{"GET", "/api/devices/dev-nas/watch", "PATCH"},
		{"OPTIONS", "/api/stats", "GET, HEAD"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do(tc.method, tc.path, "")
			p := wantProblem(t, resp, body, 405, "method-not-allowed")
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
			if !strings.Contains(p.Detail, tc.allow) {
				t.Fatalf("detail %q does not list the methods", p.Detail)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	notes := func(total int) string {
		pre, post := `{"notes":"`, `"}`
		return pre + strings.Repeat("n", total-len(pre)-len(post)) + post
	}
	t.Run("64 KiB is read", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("PATCH", "/api/devices/dev-nas", notes(64<<10), bearer(tokWrite))
		p := wantProblem(t, resp, body, 400, "invalid-body") // read, then refused: notes too long
		if *p.Errors[0].Pointer != "/notes" {
			t.Fatalf("problem %+v", p)
		}
	})
	t.Run("64 KiB + 1 with Content-Length", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("PATCH", "/api/devices/dev-nas", notes(64<<10+1), bearer(tokWrite))
		wantProblem(t, resp, body, 413, "body-too-large")
	})
	t.Run("64 KiB + 1 without Content-Length", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("PATCH", "/api/devices/dev-nas", notes(64<<10+1), bearer(tokWrite),
			func(r *http.Request) { r.ContentLength = -1 })
		wantProblem(t, resp, body, 413, "body-too-large")
	})
}

func TestUnsupportedMediaType(t *testing.T) {
	for _, ct := range []string{"", "text/plain", "application/json; charset=latin1", "application/json; version=2",
		"application/xml", "application/json-patch+json", "application/json;;"} {
		t.Run(ct, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do("PATCH", "/api/devices/dev-nas", `{"label":"x"}`, bearer(tokWrite), contentType(ct))
			wantProblem(t, resp, body, 415, "unsupported-media-type")
			if e.cmd.edit != nil {
				t.Fatal("edit applied")
			}
		})
	}
}

func TestBadBody(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		body     string
		pointers []string // nil: no errors member expected
	}{
		{"unknown member", "", `{"colour":"red"}`, []string{"/colour"}},
		{"pointer escaping", "", `{"a/b~c":1}`, []string{"/a~1b~0c"}},
		{"wrong type", "", `{"label":5}`, []string{"/label"}},
		{"ignored as string", "", `{"ignored":"yes"}`, []string{"/ignored"}},
		{"label 129 characters", "", `{"label":"` + strings.Repeat("é", 129) + `"}`, []string{"/label"}},
		{"group 65 characters", "", `{"group":"` + strings.Repeat("g", 65) + `"}`, []string{"/group"}},
		{"type 65 characters", "", `{"type":"` + strings.Repeat("t", 65) + `"}`, []string{"/type"}},
		{"notes 4097 characters", "", `{"notes":"` + strings.Repeat("n", 4097) + `"}`, []string{"/notes"}},
		{"control character", "", `{"label":"a\u0007b"}`, []string{"/label"}},
		{"bidirectional override", "", `{"label":"abc\u202egnp.exe"}`, []string{"/label"}},
		{"lone surrogate", "", `{"notes":"a\ud800b"}`, []string{"/notes"}},
		{"newline in label", "", `{"label":"a\nb"}`, []string{"/label"}},
		{"empty string", "", `{"label":""}`, []string{"/label"}},
		{"several", "", `{"label":1,"x":2,"notes":[]}`, []string{"/label", "/x", "/notes"}},
		{"duplicate member", "", `{"label":"a","label":"b"}`, []string{"/label"}},
		{"empty object", "", `{}`, []string{""}},
		{"array", "", `[{"label":"a"}]`, []string{""}},
		{"string", "", `"label"`, []string{""}},
		{"null", "", `null`, []string{""}},
		{"trailing data", "", `{"label":"a"} {"label":"b"}`, []string{""}},
		{"syntax error", "", `{"label": }`, nil},
		{"truncated", "", `{"label": "a"`, nil},
		{"whitespace only", "", ` `, []string{""}},
		{"invalid UTF-8", "", "{\"label\":\"\xff\"}", nil},
		{"watch missing", "/watch", `{}`, []string{"/watched"}},
		{"watch null", "/watch", `{"watched":null}`, []string{"/watched"}},
		{"watch string", "/watch", `{"watched":"true"}`, []string{"/watched"}},
		{"watch unknown", "/watch", `{"watched":true,"until":"never"}`, []string{"/until"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do("PATCH", "/api/devices/dev-nas"+tc.path, tc.body, bearer(tokWrite))
			p := wantProblem(t, resp, body, 400, "invalid-body")
			var got []string
			for _, fe := range p.Errors {
				if fe.Pointer == nil {
					t.Fatalf("error without pointer: %s", body)
				}
				got = append(got, *fe.Pointer)
			}
			if strings.Join(got, ",") != strings.Join(tc.pointers, ",") || (tc.pointers == nil) != (p.Errors == nil) {
				t.Fatalf("pointers %q, want %q; body %s", got, tc.pointers, body)
			}
			if e.cmd.edit != nil || e.cmd.watched != nil {
				t.Fatal("a refused body changed the device")
			}
		})
	}
}

func TestBadQuery(t *testing.T) {
	tests := []struct {
		target string
		params []string
	}{
		{"/api/devices?limit=0", []string{"limit"}},
		{"/api/devices?limit=1001", []string{"limit"}},
		{"/api/devices?limit=ten", []string{"limit"}},
		{"/api/devices?limit=%2B5", []string{"limit"}},
		{"/api/devices?limit=05", []string{"limit"}},
		{"/api/devices?limit=", []string{"limit"}},
		{"/api/devices?presence=away", []string{"presence"}},
		{"/api/devices?network=192.168.1.0", []string{"network"}},
		{"/api/devices?network=lan", []string{"network"}},
		{"/api/devices?watched=yes", []string{"watched"}},
		{"/api/devices?ignored=1", []string{"ignored"}},
		{"/api/devices?sort=size", []string{"sort"}},
		{"/api/devices?sort=--name", []string{"sort"}},
		{"/api/devices?group=", []string{"group"}},
		{"/api/devices?q=" + strings.Repeat("q", 257), []string{"q"}},
		{"/api/devices?cursor=", []string{"cursor"}},
		{"/api/devices?cursor=forged", []string{"cursor"}}, // ErrBadCursor from the inventory
		{"/api/devices?limit=1&limit=2", []string{"limit"}},
		{"/api/devices?Limit=1", []string{"Limit"}},
		{"/api/devices?=1", []string{""}},
		{"/api/devices?kind=device.online", []string{"kind"}},
		{"/api/devices?limit=0&presence=away&zzz=1", []string{"limit", "presence", "zzz"}},
		{"/api/events?kind=device.exploded", []string{"kind"}},
		{"/api/events?kind=device.online&kind=", []string{"kind"}},
		{"/api/events?since=yesterday", []string{"since"}},
		{"/api/events?since=2026-03-01T10:00:00+02:00", []string{"since"}}, // + decodes to a space
		{"/api/events?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", []string{"until"}},
		{"/api/events?device=", []string{"device"}},
		{"/api/events?cursor=forged", []string{"cursor"}},
		{"/api/devices/dev-nas/events?device=dev-nas", []string{"device"}},
		{"/api/devices/dev-nas/traffic?limit=0", []string{"limit"}},
		{"/api/devices/dev-nas/dns?until=soon", []string{"until"}},
		{"/api/scans?source=&since=x", []string{"since", "source"}},
		{"/api/groups?cursor=forged", []string{"cursor"}},
		{"/api/groups?cursor=" + "Zm9v", []string{"cursor"}}, // base64 of "foo": not a group cursor
		{"/api/stats?limit=1", []string{"limit"}},
		{"/api/devices/dev-nas?fields=name", []string{"fields"}},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do("GET", tc.target, "", bearer(tokRead))
			p := wantProblem(t, resp, body, 400, "invalid-query")
			var got []string
			for _, fe := range p.Errors {
				got = append(got, fe.Parameter)
			}
			if strings.Join(got, ",") != strings.Join(tc.params, ",") {
				t.Fatalf("parameters %q, want %q; body %s", got, tc.params, body)
			}
		})
	}
	t.Run("query string that does not decode", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{})
		resp, body := e.do("GET", "/api/devices?q=%zz", "", bearer(tokRead))
		wantProblem(t, resp, body, 400, "invalid-query")
	})
}

func TestRateLimits(t *testing.T) {
	t.Run("per token", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{TokenRate: 1, TokenBurst: 2})
		for i := range 2 {
			resp, body := e.do("GET", "/api/stats", "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			_ = i
		}
		resp, body := e.do("GET", "/api/stats", "", bearer(tokRead))
		p := wantProblem(t, resp, body, 429, "rate-limited")
		if resp.Header.Get("Retry-After") != "1" || !strings.Contains(p.Detail, "token") {
			t.Fatalf("Retry-After %q, detail %q", resp.Header.Get("Retry-After"), p.Detail)
		}
		// Another token has its own bucket.
		resp, body = e.do("GET", "/api/stats", "", bearer(tokWrite))
		wantStatus(t, resp, body, 200)
		e.clock.Advance(time.Second)
		resp, body = e.do("GET", "/api/stats", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
	})
	t.Run("per client address", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{ClientRate: 0.5, ClientBurst: 1})
		resp, body := e.do("GET", "/api/livez", "", remote("192.0.2.1:1000"))
		wantStatus(t, resp, body, 200)
		resp, body = e.do("GET", "/api/nothing", "", remote("192.0.2.1:1001"))
		p := wantProblem(t, resp, body, 429, "rate-limited")
		if resp.Header.Get("Retry-After") != "2" || !strings.Contains(p.Detail, "client address") {
			t.Fatalf("Retry-After %q, detail %q", resp.Header.Get("Retry-After"), p.Detail)
		}
		resp, body = e.do("DELETE", "/api/livez", "", remote("192.0.2.1:1001"))
		wantProblem(t, resp, body, 429, "rate-limited")
		resp, body = e.do("GET", "/api/livez", "", remote("192.0.2.2:1000"))
		wantStatus(t, resp, body, 200)
		// An IPv6 client counts by its /64.
		resp, body = e.do("GET", "/api/livez", "", remote("[2001:db8:1:2::1]:1000"))
		wantStatus(t, resp, body, 200)
		resp, body = e.do("GET", "/api/livez", "", remote("[2001:db8:1:2::ffff]:1000"))
		wantProblem(t, resp, body, 429, "rate-limited")
		e.clock.Advance(2 * time.Second)
		resp, body = e.do("GET", "/api/livez", "", remote("192.0.2.1:1000"))
		wantStatus(t, resp, body, 200)
	})
	t.Run("refused tokens per client address", func(t *testing.T) {
		e := newEnv(t, httpapi.Config{FailedAuthRate: rate.Every(time.Minute), FailedAuthBurst: 2})
		a := remote("192.0.2.7:5000")
		for _, tok := range []string{tokExpired, "jct_nope"} {
			resp, body := e.do("GET", "/api/devices", "", bearer(tok), a)
			wantProblem(t, resp, body, 401, "token-invalid")
		}
		// No token is not a guess: still 401.
		resp, body := e.do("GET", "/api/devices", "", a)
		wantProblem(t, resp, body, 401, "token-missing")
		// Past the limit, another refused token from that address is 429...
		resp, body = e.do("GET", "/api/devices", "", bearer("jct_stillwrong"), a)
		wantProblem(t, resp, body, 429, "rate-limited")
		if got := resp.Header.Get("Retry-After"); got != "60" {
			t.Fatalf("Retry-After %q, want 60", got)
		}
		// ...but a valid token from the same address (another client behind
		// the same NAT or proxy) is never locked out.
		for range 3 {
			resp, body = e.do("GET", "/api/devices", "", bearer(tokRead), a)
			wantStatus(t, resp, body, 200)
		}
		resp, body = e.do("GET", "/api/devices", "", bearer(tokRead), remote("192.0.2.8:5000"))
		wantStatus(t, resp, body, 200)
		// Another address has its own refusals.
		resp, body = e.do("GET", "/api/devices", "", bearer("jct_nope"), remote("192.0.2.8:5000"))
		wantProblem(t, resp, body, 401, "token-invalid")
		e.clock.Advance(time.Minute)
		resp, body = e.do("GET", "/api/devices", "", bearer(tokRead), a)
		wantStatus(t, resp, body, 200)
	})
}

func TestPanicIsProblem(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	e.inv.panic = true
	resp, body := e.do("GET", "/api/devices/dev-nas", "", bearer(tokRead), header("X-Request-Id", "trace-77"))
	p := wantProblem(t, resp, body, 500, "internal")
	if p.RequestID != "trace-77" || strings.Contains(string(body), "bbolt") {
		t.Fatalf("body %s", body)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"panic":"bbolt: page 42`) || !strings.Contains(logs, "trace-77") {
		t.Fatalf("panic not logged with request id: %s", logs)
	}
	line := e.accessLine()
	if line["status"] != float64(500) {
		t.Fatalf("access log %v", line)
	}
	// The server still answers.
	e.inv.panic = false
	resp, body = e.do("GET", "/api/devices/dev-nas", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	_ = strconv.Itoa
}

// FuzzDeviceListHTTP sends any query string to GET /api/devices through
// the whole server: the answer is a 200 or a 400 problem, and either
// matches the OpenAPI document.
func FuzzDeviceListHTTP(f *testing.F) {
	for _, s := range []string{"q=nas&limit=2", "presence=away", "=1", "%zz", "sort=-ip&network=10.0.0.0/8", "kind=x&kind=y"} {
		f.Add(s)
	}
	e := newEnv(f, httpapi.Config{ClientRate: rate.Inf, TokenRate: rate.Inf})
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest(http.MethodGet, "/api/devices", nil)
		req.URL.RawQuery = raw
		req.Header.Set("Authorization", "Bearer "+tokRead)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		resp := rec.Result()
		if resp.StatusCode != 200 && resp.StatusCode != 400 {
			t.Fatalf("query %q: status %d: %s", raw, resp.StatusCode, rec.Body.Bytes())
		}
		if err := validator.Validate(req, resp.StatusCode, resp.Header, rec.Body.Bytes()); err != nil {
			t.Fatalf("query %q: %v", raw, err)
		}
	})
}

func TestWritesHaveTheirOwnLimit(t *testing.T) {
	e := newEnv(t, httpapi.Config{WriteRate: rate.Every(time.Minute), WriteBurst: 3})
	for i := range 3 {
		resp, body := e.do("PATCH", "/api/devices/dev-nas", fmt.Sprintf(`{"notes":"edit %d"}`, i), bearer(tokWrite), contentType("application/json"))
		wantStatus(t, resp, body, 200)
	}
	resp, body := e.do("PATCH", "/api/devices/dev-nas", `{"notes":"one too many"}`, bearer(tokWrite), contentType("application/json"))
	wantProblem(t, resp, body, 429, "rate-limited")
	if !strings.Contains(string(body), "writes per second") {
		t.Fatalf("the 429 does not say it is the write limit: %s", body)
	}
	// Reads with the same token go on.
	resp, body = e.do("GET", "/api/devices/dev-nas", "", bearer(tokWrite))
	wantStatus(t, resp, body, 200)
	e.clock.Advance(time.Minute)
	resp, body = e.do("PATCH", "/api/devices/dev-nas/watch", `{"watched":true}`, bearer(tokWrite), contentType("application/json"))
	wantStatus(t, resp, body, 200)
}

func TestWritesRefusedWhenTheDiskIsNearlyFull(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	const total = 32 << 30 // reserve: 1% = 327 MiB
	e.space.set(300<<20, total, nil)
	for _, tc := range []struct{ path, body string }{
		{"/api/devices/dev-nas", `{"label":"x"}`},
		{"/api/devices/dev-nas/watch", `{"watched":true}`},
	} {
		resp, body := e.do("PATCH", tc.path, tc.body, bearer(tokWrite), contentType("application/json"))
		p := wantProblem(t, resp, body, 507, "insufficient-storage")
		if !strings.Contains(p.Detail, "300 MiB free") || !strings.Contains(p.Detail, "327 MiB") {
			t.Fatalf("detail %q should give the free space and the reserve", p.Detail)
		}
	}
	if n := e.cmd.editCount(); n != 0 {
		t.Fatalf("%d edits reached the commander while the disk was nearly full", n)
	}
	// Reads go on.
	resp, body := e.do("GET", "/api/devices/dev-nas", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	// Above the reserve, or when the space is unknown, writes pass.
	e.space.set(400<<20, total, nil)
	resp, body = e.do("PATCH", "/api/devices/dev-nas", `{"label":"x"}`, bearer(tokWrite), contentType("application/json"))
	wantStatus(t, resp, body, 200)
	e.space.set(0, 0, errors.New("statfs failed"))
	resp, body = e.do("PATCH", "/api/devices/dev-nas", `{"label":"y"}`, bearer(tokWrite), contentType("application/json"))
	wantStatus(t, resp, body, 200)
}

func TestWriteReserve(t *testing.T) {
	for total, want := range map[uint64]uint64{0: 64 << 20, 1 << 30: 64 << 20, 100 << 30: 1 << 30} {
		if got := httpapi.WriteReserve(total); got != want {
			t.Errorf("WriteReserve(%d) = %d, want %d", total, got, want)
		}
	}
}

func TestStoreFailureIs503(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	e.cmd.mu.Lock()
	e.cmd.failErr = fmt.Errorf("%w: store: append: commit: fdatasync: input/output error", projections.ErrWriteFailed)
	e.cmd.mu.Unlock()
	for _, tc := range []struct{ path, body string }{
		{"/api/devices/dev-nas", `{"label":"x"}`},
		{"/api/devices/dev-nas/watch", `{"watched":true}`},
	} {
		resp, body := e.do("PATCH", tc.path, tc.body, bearer(tokWrite), contentType("application/json"))
		p := wantProblem(t, resp, body, 503, "store-failed")
		if !strings.Contains(p.Detail, "unknown") || strings.Contains(string(body), "fdatasync") {
			t.Fatalf("detail %q: must say the outcome is unknown and leak nothing internal", p.Detail)
		}
	}
	if !strings.Contains(e.logs.String(), "fdatasync") {
		t.Fatal("the cause is not in the log")
	}
}
