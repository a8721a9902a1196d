package httpapi_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/httpapi/apitest"
)

// validator checks every response the tests of this package receive (env.do
// is the only way they send requests). After a full run, TestMain fails if
// some documented (operation, status) pair was never exercised.
var validator *apitest.Validator

func TestMain(m *testing.M) {
	v, err := apitest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	validator = v
	code := m.Run()
	if code == 0 && fullRun() {
		if missing := v.Missing(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: responses documented in openapi.yaml that no test received (test them or remove them):\n  %s\n",
				strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// fullRun reports whether every test ran (no -run, -skip or -fuzz).
func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip", "test.fuzz"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// env is one API server over fakes.
type env struct {
	t     testing.TB
	h     http.Handler
	inv   *fakeInventory
	cmd   *fakeCommander
	auth  *fakeAuth
	ready *fakeReady
	clock *fakeClock
	logs  *syncBuffer
	space *fakeSpace
	// traffic answers the traffic endpoints (traffic_test.go).
	traffic *fakeTraffic
}

func newEnv(t testing.TB, cfg httpapi.Config) *env {
	t.Helper()
	inv := newFakeInventory()
	e := &env{
		t: t, inv: inv, cmd: &fakeCommander{inv: inv}, auth: &fakeAuth{}, ready: &fakeReady{ready: true},
		clock: &fakeClock{t: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}, logs: &syncBuffer{},
		space: &fakeSpace{free: 100 << 30, total: 200 << 30},
	}
	e.traffic = &fakeTraffic{inv: inv}
	h, err := httpapi.New(cfg, httpapi.Deps{
		Inventory: e.inv, Commander: e.cmd, Auth: e.auth, Ready: e.ready, Space: e.space,
		Log: zerolog.New(e.logs), Now: e.clock.Now, Traffic: e.traffic,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.h = h
	return e
}

type reqOpt func(*http.Request)

func bearer(tok string) reqOpt { return authz("Bearer " + tok) }

func authz(v string) reqOpt {
	return func(r *http.Request) { r.Header.Set("Authorization", v) }
}

func header(k, v string) reqOpt { return func(r *http.Request) { r.Header.Add(k, v) } }

func remote(addr string) reqOpt { return func(r *http.Request) { r.RemoteAddr = addr } }

func contentType(ct string) reqOpt {
	return func(r *http.Request) {
		if ct == "" {
			r.Header.Del("Content-Type")
		} else {
			r.Header.Set("Content-Type", ct)
		}
	}
}

// do sends one request through the handler; the validator checks the
// answer against openapi.yaml. A body is sent as application/json unless
// an option says otherwise.
func (e *env) do(method, target, body string, opts ...reqOpt) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	return validator.Do(e.t, e.h, req)
}

type problemDoc struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	RequestID string `json:"request_id"`
	Errors    []struct {
		Pointer   *string `json:"pointer"`
		Parameter string  `json:"parameter"`
		Detail    string  `json:"detail"`
	} `json:"errors"`
}

// wantProblem checks status, content type and problem type, and returns
// the problem.
func wantProblem(t testing.TB, resp *http.Response, body []byte, status int, slug string) problemDoc {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemDoc
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if want := "urn:jocasta:problem:" + slug; p.Type != want {
		t.Fatalf("problem type %q, want %q; detail %q", p.Type, want, p.Detail)
	}
	if p.Title == "" || p.Detail == "" {
		t.Fatalf("problem without title or detail: %s", body)
	}
	return p
}

func wantStatus(t testing.TB, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
}

func decode[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T: %v; body %s", v, err, body)
	}
	return v
}

// logLines parses the JSON log lines written so far.
func (e *env) logLines() []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// accessLine returns the last access log line.
func (e *env) accessLine() map[string]any {
	e.t.Helper()
	lines := e.logLines()
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i]["message"] == "http request" {
			return lines[i]
		}
	}
	e.t.Fatalf("no access log line in %q", e.logs.String())
	return nil
}
