package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
)

// fieldsOf splits a table into rows of whitespace-separated fields.
func fieldsOf(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

// notifyCLI runs `jocasta notify ARGS --config cfg`.
func notifyCLI(t *testing.T, cfg string, args ...string) (int, string, string) {
	t.Helper()
	return cli(t, "", append([]string{"notify", args[0], "--config", cfg}, args[1:]...)...)
}

// TestNotifyCLIBothWays runs the notify commands on the database itself
// (serve stopped) and through the control socket (serve running), with
// the same outputs and refusals either way; writes name the OS user.
func TestNotifyCLIBothWays(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	var modeMu sync.Mutex
	mode := hookOK
	setMode := func(m string) { modeMu.Lock(); mode = m; modeMu.Unlock() }
	rec, err := newHookRecorder(secret, func() string { modeMu.Lock(); defer modeMu.Unlock(); return mode })
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(rec)
	defer hook.Close()
	phone := httptest.NewServer(rec) // disabled: never sent to
	defer phone.Close()
	cfg := writeConfig(t, t.TempDir(), noSweeps+"notify:\n"+
		"  hook:\n    timeout: 1s\n    webhook:\n      url: "+hook.URL+"/in?token=S3CR3T\n      secret: "+secret+"\n"+
		"  phone:\n    enabled: false\n    push:\n      url: "+phone.URL+"/jocasta\n      token: tk_S3CR3T\n")
	seed(t, cfg, sweepAt(time.Now().UTC().Add(-time.Minute), hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}))
	me := actor()

	// The refusals, the same sentence whichever way the command went.
	refusals := func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"unknown kind", []string{"set", "hook", "device.exploded@all"}, exitUser, "not a change kind"},
			{"host bits", []string{"set", "hook", "device.online@network=10.9.0.1/24"}, exitUser, "host bits"},
			{"unknown destination", []string{"test", "pager"}, exitUser, "jocasta: no destination notify.pager in the configuration (see jocasta notify list)\n"},
			{"unknown destination ledger", []string{"ledger", "pager"}, exitUser, "no destination notify.pager"},
			{"unknown destination redeliver", []string{"redeliver", "--all", "pager"}, exitUser, "no destination notify.pager"},
			{"unknown record", []string{"redeliver", "hook", "nope"}, exitUser, "notify.hook has no ledger record nope (see jocasta notify ledger hook --state dead)"},
			{"bad state", []string{"ledger", "hook", "--state", "lost"}, exitUsage, "--state"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, out, errOut := notifyCLI(t, cfg, tt.args...)
				if code != tt.code || !strings.Contains(errOut, tt.want) || out != "" {
					t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", code, errOut, out, tt.code, tt.want)
				}
			})
		}
	}
	list := func(t *testing.T, wantRules string, dead int) {
		t.Helper()
		code, out, errOut := notifyCLI(t, cfg, "list")
		want := [][]string{
			{"NAME", "CHANNEL", "ENABLED", "TARGET", "PENDING", "SENT", "FILTERED", "DEAD", "RULES"},
			append([]string{"hook", "webhook", "true", hook.URL, "0", "0", "0", strconv.Itoa(dead)}, strings.Fields(wantRules)...),
			{"phone", "push", "false", phone.URL, "0", "0", "0", "0", "device.discovered@all", "device.online,device.quiet@watched", "(default)"},
		}
		if code != 0 || errOut != "" {
			t.Fatalf("list: %d %q", code, errOut)
		}
		got := fieldsOf(out)
		// sent and filtered grow with what serve delivered: compare the rest.
		if len(got) == 3 {
			got[1][5], got[1][6] = "0", "0"
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("list (-want +got):\n%s\n%s", d, out)
		}
		if strings.Contains(out, "S3CR3T") || strings.Contains(out, "/in") || strings.Contains(out, "/jocasta") {
			t.Errorf("list shows a URL's path, query or a token:\n%s", out)
		}
	}
	set := func(t *testing.T) {
		t.Helper()
		code, out, errOut := notifyCLI(t, cfg, "set", "hook", "device.edited@all", "device.online@network=10.9.0.0/24")
		if want := "notify.hook now receives: device.edited@all device.online@network=10.9.0.0/24\n"; code != 0 || out != want {
			t.Fatalf("set: %d %q %q, want %q", code, out, errOut, want)
		}
		code, out, errOut = notifyCLI(t, cfg, "set", "hook", "device.edited@all", "--json")
		var v notify.View
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("set --json: %d %q %q", code, out, errOut)
		}
		want := notify.View{Name: "hook", Channel: "webhook", Enabled: true, Target: &hook.URL,
			Rules: []notify.Rule{{Kinds: []string{projections.ChangeEdited}, Scope: "all"}}, RulesSetBy: &me}
		v.RulesSetAt, v.Ledger = nil, notify.Stats{}
		if d := cmp.Diff(want, v); d != "" {
			t.Errorf("set --json (-want +got):\n%s", d)
		}
	}
	test := func(t *testing.T) {
		t.Helper()
		before := len(rec.got())
		code, out, errOut := notifyCLI(t, cfg, "test", "hook")
		if !regexp.MustCompile(`^notify\.hook: test sent, answered 200 in \d+ ms\n$`).MatchString(out) || code != 0 {
			t.Fatalf("test: %d %q %q", code, out, errOut)
		}
		code, out, _ = notifyCLI(t, cfg, "test", "hook", "--json")
		var a notify.Attempt
		if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.Status != 200 || a.Error != "" || time.Since(a.Time) > time.Minute {
			t.Fatalf("test --json: %d %q", code, out)
		}
		if n := len(rec.got()); n != before+2 {
			t.Errorf("the receiver accepted %d new test messages, want 2", n-before)
		}
		setMode(hook503)
		code, _, errOut = notifyCLI(t, cfg, "test", "hook")
		setMode(hookOK)
		if code != exitUser || !regexp.MustCompile(`^jocasta: notify\.hook: test failed after \d+ ms: answered 503 Service Unavailable\n$`).MatchString(errOut) {
			t.Errorf("failed test: %d %q", code, errOut)
		}
	}
	ledger := func(t *testing.T, args ...string) []notify.Record {
		t.Helper()
		code, out, errOut := notifyCLI(t, cfg, append([]string{"ledger", "hook", "--json"}, args...)...)
		var recs []notify.Record
		if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || recs == nil {
			t.Fatalf("ledger --json: %d %q %q", code, out, errOut)
		}
		return recs
	}

	t.Run("offline", func(t *testing.T) {
		refusals(t)
		list(t, "device.discovered@all device.online,device.quiet@watched (default)", 0)
		set(t)
		list(t, "device.edited@all", 0)
		test(t)
		if code, out, _ := notifyCLI(t, cfg, "ledger", "hook"); code != 0 || out != "ID  TIME  KIND  STATE  ATTEMPTS  LAST\n" {
			t.Errorf("empty ledger: %d %q", code, out)
		}
		if recs := ledger(t); len(recs) != 0 {
			t.Errorf("ledger before serve ever ran: %+v", recs)
		}
		if code, out, _ := notifyCLI(t, cfg, "redeliver", "--all", "hook"); code != 0 || out != "notify.hook: 0 record(s) queued; serve delivers them when it runs\n" {
			t.Errorf("redeliver --all: %d %q", code, out)
		}
	})

	d := startDaemon(t, cfg)
	code, out, _ := cli(t, "", "token", "create", "--config", cfg, "--name", "ops", "--mode", "read_write", "--expires", "never")
	if code != 0 {
		t.Fatal("token create through the socket failed")
	}
	tok := lastLine(out)
	_, body := d.do(t, "GET", "/api/devices", tok, "", "")
	var devs projections.Page[projections.Device]
	if err := json.Unmarshal(body, &devs); err != nil || len(devs.Items) != 1 {
		t.Fatalf("devices: %s", body)
	}
	edit := func(t *testing.T, label string) {
		t.Helper()
		if code, body := d.do(t, "PATCH", "/api/devices/"+devs.Items[0].ID, tok, "application/json", `{"label": "`+label+`"}`); code != 200 {
			t.Fatalf("edit: %d %s", code, body)
		}
	}
	waitState := func(t *testing.T, state string, n int) []notify.Record {
		t.Helper()
		var recs []notify.Record
		if !eventually(20*time.Second, func() bool { recs = ledger(t, "--state", state); return len(recs) == n }) {
			t.Fatalf("ledger --state %s: %d records, want %d: %+v", state, len(recs), n, recs)
		}
		return recs
	}

	var deadID string
	t.Run("serve", func(t *testing.T) {
		refusals(t)
		list(t, "device.edited@all", 0)
		set(t)
		test(t)
		setMode(hook410)
		edit(t, "first")
		dead := waitState(t, notify.StateDead, 1)
		deadID = dead[0].ID
		if a := dead[0].Attempts; len(a) != 1 || a[0].Status != 410 || dead[0].Entry.Kind != projections.ChangeEdited {
			t.Fatalf("dead record: %+v", dead[0])
		}
		list(t, "device.edited@all", 1)
		code, out, _ := notifyCLI(t, cfg, "ledger", "hook", "--state", "dead")
		rows := fieldsOf(out)
		if code != 0 || len(rows) != 2 || !slices.Equal(rows[0], []string{"ID", "TIME", "KIND", "STATE", "ATTEMPTS", "LAST"}) ||
			!slices.Equal(rows[1][:1], []string{deadID}) || !slices.Equal(rows[1][2:6], []string{"device.edited", "dead", "1", "410"}) ||
			!strings.HasSuffix(out, "answered 410 Gone: not retried (only timeouts, 408, 429 and 5xx are)\n") {
			t.Fatalf("ledger --state dead: %d\n%s", code, out)
		}
		setMode(hookOK)
		if code, out, errOut := notifyCLI(t, cfg, "redeliver", "hook", deadID); code != 0 || out != "notify.hook: 1 record(s) queued; serve delivers them now\n" {
			t.Fatalf("redeliver: %d %q %q", code, out, errOut)
		}
		sent := waitState(t, notify.StateSent, 1)
		if sent[0].ID != deadID || len(sent[0].Attempts) != 2 || sent[0].Attempts[1].Status != 200 || rec.got()[deadID] != 1 {
			t.Fatalf("re-delivered record: %+v (accepted %d times)", sent[0], rec.got()[deadID])
		}
		if code, _, errOut := notifyCLI(t, cfg, "redeliver", "hook", deadID); code != exitUser ||
			errOut != "jocasta: record "+deadID+" of notify.hook is not dead: only dead records are re-delivered\n" {
			t.Errorf("redeliver of a sent record: %d %q", code, errOut)
		}
		// A second dead record, for the offline re-delivery below.
		setMode(hook410)
		edit(t, "second")
		waitState(t, notify.StateDead, 1)
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	t.Run("offline again", func(t *testing.T) {
		dead := ledger(t, "--state", "dead")
		if len(dead) != 1 || dead[0].ID == deadID {
			t.Fatalf("dead records after serve stopped: %+v", dead)
		}
		// Paged: one record a page, the cursor to go on on standard error.
		code, out, errOut := notifyCLI(t, cfg, "ledger", "hook", "--json", "--limit", "1")
		var first, second []notify.Record
		m := regexp.MustCompile(`^more records: jocasta notify ledger hook --cursor (\S+)\n$`).FindStringSubmatch(errOut)
		if code != 0 || json.Unmarshal([]byte(out), &first) != nil || len(first) != 1 || m == nil {
			t.Fatalf("ledger --limit 1: %d %q %q", code, out, errOut)
		}
		code, out, errOut = notifyCLI(t, cfg, "ledger", "hook", "--json", "--limit", "1", "--cursor", m[1])
		if code != 0 || json.Unmarshal([]byte(out), &second) != nil || len(second) != 1 || second[0].ID == first[0].ID || errOut != "" {
			t.Fatalf("ledger --cursor: %d %q %q (first page %s)", code, out, errOut, first[0].ID)
		}
		if code, _, errOut := notifyCLI(t, cfg, "ledger", "hook", "--cursor", "zz"); code != exitUser || !strings.Contains(errOut, "not a cursor") {
			t.Errorf("ledger with a bad cursor: %d %q", code, errOut)
		}
		code, out, _ = notifyCLI(t, cfg, "redeliver", "--all", "hook", "--json")
		var r notifyRedeliverResp
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r != (notifyRedeliverResp{Destination: "hook", Queued: 1}) {
			t.Fatalf("redeliver --all --json: %d %q", code, out)
		}
		if p := ledger(t, "--state", "pending"); len(p) != 1 || p[0].ID != dead[0].ID {
			t.Fatalf("pending after an offline re-delivery: %+v", p)
		}
		setMode(hookOK)
		startDaemon(t, cfg)
		if !eventually(20*time.Second, func() bool { return rec.got()[dead[0].ID] == 1 }) {
			t.Fatalf("the record re-queued offline was not delivered once serve ran: %+v", ledger(t))
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.refused != 0 {
			t.Errorf("%d deliveries failed the reference library's signature check", rec.refused)
		}
	})
}

// A CLI talks to a serve that may be of the release before (an upgrade
// replaced the binary; serve restarts later): its notify/ledger answered
// the records alone, without the page around them.
func TestLedgerFromAnOlderServe(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		next       bool
	}{
		{"records alone (before --cursor)", `[{"id":"ev1-0","state":"dead"},{"id":"ev2-0","state":"sent"}]`, false},
		{"a page", `{"items":[{"id":"ev1-0","state":"dead"},{"id":"ev2-0","state":"sent"}],"next_cursor":"abc"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/notify/ledger" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			s := &socketAdmin{client: &http.Client{Transport: rewriteTo(srv.URL)}}
			page, err := s.NotifyLedger(context.Background(), notifyLedgerReq{Name: "hook", Limit: 10})
			if err != nil || len(page.Items) != 2 || page.Items[1].ID != "ev2-0" || (page.NextCursor != nil) != tc.next {
				t.Fatalf("page %+v, %v", page, err)
			}
		})
	}
}

// rewriteTo sends every request to base instead (a test server standing
// in for the control socket).
type rewriteTo string

func (b rewriteTo) RoundTrip(r *http.Request) (*http.Response, error) {
	u, err := url.Parse(string(b) + r.URL.Path)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL, r.Host = u, u.Host
	return http.DefaultTransport.RoundTrip(r)
}
