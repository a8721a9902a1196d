package apitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jocasta/jocasta/httpapi/apitest"
)

const reqID = "req-1"

func hdr(kv ...string) http.Header {
	h := http.Header{"X-Request-Id": {reqID}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const goodDevice = `{"id":"d1","name":"nas","names":{"dns":{"name":"nas.lan","last_confirmed":"2026-01-02T03:04:05Z"}},
"label":null,"group":"lab","type":null,"notes":null,"ignored":false,"watched":true,"presence":"online",
"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","mac":"aa:bb:cc:dd:ee:ff","mac_random":false,
"vendor":null,"addresses":[{"ip":"192.168.1.5","network":"192.168.1.0/24","first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","retired_at":null}],
"ports":[],"services":[],"sources":["sweep:x"],"attached_to":null,"coverage":null,"evidence":{},"upnp":null}`

const goodEvents = `{"items":[{"id":"e1-0","seq":1,"time":"2026-01-01T00:00:00Z","kind":"device.discovered","device_id":"d1",
"source":"sweep:lab","actor":"sweep:lab","summary":"nas was discovered by sweep:lab","data":null}],"next_cursor":null}`

func problem(status int, slug, instance string) string {
	return `{"type":"urn:jocasta:problem:` + slug + `","title":"t","status":` + itoa(status) +
		`,"detail":"d","instance":"` + instance + `","request_id":"` + reqID + `"}`
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+n/100)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10)))
}

// TestValidate checks that the validator accepts what the document
// allows and refuses the drifts it exists to catch.
func TestValidate(t *testing.T) {
	v := apitest.NewValidator(t)
	tests := []struct {
		name    string
		method  string
		target  string
		reqHdr  http.Header
		status  int
		header  http.Header
		body    string
		wantErr string // "" = valid
	}{
		{"device ok", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"), goodDevice, ""},
		{"device extra member", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodDevice, `"id":"d1"`, `"id":"d1","extra":1`, 1), "doesn't match"},
		{"device missing member", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodDevice, `"mac_random":false,`, ``, 1), "doesn't match"},
		{"device non-UTC time", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodDevice, `"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","mac"`, `"first_seen":"2026-01-01T00:00:00+02:00","last_seen":"2026-01-02T00:00:00Z","mac"`, 1), "doesn't match"},
		{"device null addresses", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodDevice, `"ports":[]`, `"ports":null`, 1), "doesn't match"},
		{"bad presence", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodDevice, `"presence":"online"`, `"presence":"away"`, 1), "doesn't match"},
		{"content type with charset", "GET", "/api/devices/d1", nil, 200, hdr("Content-Type", "application/json; charset=utf-8"), goodDevice, "not exactly"},
		{"undocumented status", "GET", "/api/devices/d1", nil, 418, hdr("Content-Type", "application/problem+json"), problem(418, "x", "/api/devices/d1"), "status"},
		{"no request id", "GET", "/api/livez", nil, 200, http.Header{"Content-Type": {"application/json"}}, `{"status":"ok"}`, "X-Request-Id"},
		{"event ok", "GET", "/api/events", nil, 200, hdr("Content-Type", "application/json"), goodEvents, ""},
		{"event with empty actor", "GET", "/api/events", nil, 200, hdr("Content-Type", "application/json"),
			strings.Replace(goodEvents, `"actor":"sweep:lab"`, `"actor":""`, 1), "doesn't match"},
		{"livez ok", "GET", "/api/livez", nil, 200, hdr("Content-Type", "application/json"), `{"status":"ok"}`, ""},
		{"livez wrong", "GET", "/api/livez", nil, 200, hdr("Content-Type", "application/json"), `{"status":"up"}`, "doesn't match"},
		{"HEAD ok", "HEAD", "/api/livez", nil, 200, hdr("Content-Type", "application/json"), ``, ""},
		{"HEAD with body", "HEAD", "/api/livez", nil, 200, hdr("Content-Type", "application/json"), `{"status":"ok"}`, "HEAD"},
		{"401 ok", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json", "WWW-Authenticate", `Bearer realm="jocasta", error="invalid_token"`),
			problem(401, "token-invalid", "/api/stats"), ""},
		{"401 without WWW-Authenticate", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json"),
			problem(401, "token-invalid", "/api/stats"), "WWW-Authenticate"},
		{"401 challenge without error", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json", "WWW-Authenticate", `Bearer realm="jocasta"`),
			problem(401, "token-missing", "/api/stats"), "WWW-Authenticate"},
		{"401 wrong slug", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json", "WWW-Authenticate", `Bearer realm="jocasta", error="invalid_token"`),
			problem(401, "not-found", "/api/stats"), "doesn't match"},
		{"problem status differs", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json", "WWW-Authenticate", `Bearer realm="jocasta", error="invalid_token"`),
			problem(400, "token-missing", "/api/stats"), "differs"},
		{"problem instance differs", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/problem+json", "WWW-Authenticate", `Bearer realm="jocasta", error="invalid_token"`),
			problem(401, "token-missing", "/api/other"), "instance"},
		{"problem as JSON", "GET", "/api/stats", nil, 401, hdr("Content-Type", "application/json", "WWW-Authenticate", `Bearer realm="jocasta", error="invalid_token"`),
			problem(401, "token-missing", "/api/stats"), "Content-Type"},
		{"429 without Retry-After", "GET", "/api/stats", nil, 429, hdr("Content-Type", "application/problem+json"),
			problem(429, "rate-limited", "/api/stats"), "Retry-After"},
		{"429 ok", "GET", "/api/stats", nil, 429, hdr("Content-Type", "application/problem+json", "Retry-After", "3"),
			problem(429, "rate-limited", "/api/stats"), ""},
		{"unknown path 404", "GET", "/api/nope", nil, 404, hdr("Content-Type", "application/problem+json"), problem(404, "not-found", "/api/nope"), ""},
		{"unknown path 200", "GET", "/api/nope", nil, 200, hdr("Content-Type", "application/json"), `{}`, "status"},
		{"405 ok", "DELETE", "/api/devices/d1", nil, 405, hdr("Content-Type", "application/problem+json", "Allow", "GET, HEAD, PATCH"),
			problem(405, "method-not-allowed", "/api/devices/d1"), ""},
		{"405 without Allow", "DELETE", "/api/devices/d1", nil, 405, hdr("Content-Type", "application/problem+json"),
			problem(405, "method-not-allowed", "/api/devices/d1"), "Allow"},
		{"500 with errors", "GET", "/api/stats", nil, 500, hdr("Content-Type", "application/problem+json"),
			strings.Replace(problem(500, "internal", "/api/stats"), `"detail":"d"`, `"detail":"d","errors":[{"parameter":"x","detail":"y"}]`, 1), "doesn't match"},
		{"problem extra member", "GET", "/api/stats", nil, 500, hdr("Content-Type", "application/problem+json"),
			strings.Replace(problem(500, "internal", "/api/stats"), `"detail":"d"`, `"detail":"d","stack":"x"`, 1), "Problem"},
		{"UI page not checked", "GET", "/devices", nil, 200, http.Header{"Content-Type": {"text/html"}}, `<html>`, ""},
		{"UI problem checked", "GET", "/mcp", nil, 404, hdr("Content-Type", "application/problem+json"), problem(404, "not-found", "/elsewhere"), "instance"},
		{"preflight ok", "OPTIONS", "/api/devices", http.Header{"Origin": {"https://a.example"}, "Access-Control-Request-Method": {"GET"}}, 204,
			hdr("Access-Control-Allow-Origin", "https://a.example", "Access-Control-Allow-Methods", "GET"), ``, ""},
		{"preflight wrong origin", "OPTIONS", "/api/devices", http.Header{"Origin": {"https://a.example"}, "Access-Control-Request-Method": {"GET"}}, 204,
			hdr("Access-Control-Allow-Origin", "*", "Access-Control-Allow-Methods", "GET"), ``, "Origin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, nil)
			for k, vs := range tc.reqHdr {
				req.Header[k] = vs
			}
			err := v.Validate(req, tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate accepted it, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Validate: %v\nwant an error containing %q", err, tc.wantErr)
			}
		})
	}
}
