package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/ui"
)

// TestMergeAndSeparate drives the device page's merge form and Separate
// buttons through the real write side: each step's status, where it
// leads, what the page then says, and that the inventory agrees.
func TestMergeAndSeparate(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	a, b, x := s.deviceID("10.0.0.1"), s.deviceID("10.0.0.2"), s.deviceID("10.0.0.3")
	ctx := context.Background()
	tests := []struct {
		name     string
		path     string
		form     url.Values
		noToken  bool
		status   int
		location string
		want     []string
		not      string
		check    func(t *testing.T)
	}{
		{name: "merge b into a", path: "/devices/" + a + "/merge", form: url.Values{"device": {" " + b + " "}},
			status: http.StatusSeeOther, location: "/devices/" + a + "?merged=" + b,
			check: func(t *testing.T) {
				_, err := s.inv.Device(ctx, b)
				if err == nil || !strings.Contains(err.Error(), a) {
					t.Fatalf("b after the merge: %v, want merged into %s", err, a)
				}
				p, _ := s.inv.ListEvents(ctx, projections.EventFilter{Device: a, Kinds: []string{projections.ChangeMerged}, Limit: 10})
				if len(p.Items) != 1 || p.Items[0].Actor != "ada" {
					t.Fatalf("merge entries %+v, want one by ada", p.Items)
				}
			}},
		{name: "merge without form token", path: "/devices/" + a + "/merge", form: url.Values{"device": {x}}, noToken: true,
			status: http.StatusForbidden},
		{name: "merge nothing", path: "/devices/" + a + "/merge", form: url.Values{"device": {""}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "Enter the id of the other device"}},
		{name: "merge unknown id", path: "/devices/" + a + "/merge", form: url.Values{"device": {"dnope"}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "no device has id", "dnope", `value="dnope"`}, not: "/api/"},
		{name: "merge itself", path: "/devices/" + a + "/merge", form: url.Values{"device": {a}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "is the device itself"}},
		{name: "merge a device merged elsewhere", path: "/devices/" + x + "/merge", form: url.Values{"device": {b}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "is merged into", a}, not: "/api/"},
		{name: "merge into an unknown device", path: "/devices/dnope/merge", form: url.Values{"device": {x}},
			status: http.StatusNotFound},
		{name: "separate a device not merged here", path: "/devices/" + x + "/unmerge", form: url.Values{"device": {b}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "not into"}},
		{name: "separate b from a", path: "/devices/" + a + "/unmerge", form: url.Values{"device": {b}},
			status: http.StatusSeeOther, location: "/devices/" + a + "?separated=" + b,
			check: func(t *testing.T) {
				if _, err := s.inv.Device(ctx, b); err != nil {
					t.Fatalf("b after separating: %v", err)
				}
			}},
		{name: "separate b again", path: "/devices/" + a + "/unmerge", form: url.Values{"device": {b}},
			status: http.StatusBadRequest, want: []string{`id="merge-problem"`, "is not merged"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w := c.get("/devices/" + a); w.Code != http.StatusOK {
				t.Fatalf("device page: %d", w.Code)
			}
			form := tc.form
			if tc.noToken {
				form.Set("form_token", "")
			}
			w := c.post(tc.path, form)
			wantStatus(t, w, tc.status, tc.want...)
			if tc.not != "" && strings.Contains(w.Body.String(), tc.not) {
				t.Errorf("body has %q:\n%s", tc.not, w.Body.String())
			}
			if tc.location != "" && w.Header().Get("Location") != tc.location {
				t.Fatalf("Location %q, want %q", w.Header().Get("Location"), tc.location)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
		if tc.name == "merge b into a" {
			// While merged: a's page lists b with a Separate button; b's
			// page says where it went.
			wantStatus(t, c.get("/devices/"+a+"?merged="+b), http.StatusOK, "is merged into this one",
				`action="/devices/`+a+`/unmerge"`, `name="device" value="`+b+`"`, "Separate")
			wantStatus(t, c.get("/devices/"+b), http.StatusOK, "was merged into", `href="/devices/`+a+`"`)
		}
	}
	// After separating, a lists no member and b has its own page again.
	wantStatus(t, c.get("/devices/"+a), http.StatusOK, "No other device is merged into this one.")
	wantStatus(t, c.get("/devices/"+b), http.StatusOK, "nas.lan", "Merge another device into this one")
}

// TestHistoryPage reads the inventory at instants and the changes
// between two, in the configured zone, from the real inventory's history.
func TestHistoryPage(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	// The log's clock only moves forward (the account is added at
	// t0), so the sweep and the edit come after t0.
	s := newStack(t, stackOpts{cfg: ui.Config{Location: berlin}})
	s.addUser("ada", "correct horse")
	s.clock.Advance(time.Hour)
	s.sweep(s.clock.Now(), host(1, "printer.lan"), host(2, "nas.lan"), host(3, ""))
	nas := s.deviceID("10.0.0.2")
	s.clock.Advance(time.Hour)
	c := s.client()
	c.signIn("ada", "correct horse")
	wantStatus(t, c.post("/devices/"+nas, url.Values{"label": {"Big NAS"}, "group": {"storage"}}), http.StatusSeeOther)
	local := func(d time.Duration) string { return t0.Add(d).In(berlin).Format("2006-01-02T15:04") }
	tests := []struct {
		name   string
		query  string
		status int
		want   []string
		not    []string
	}{
		{name: "default is now", query: "", status: http.StatusOK,
			want: []string{`type="datetime-local"`, `value="` + local(2*time.Hour) + `"`, "Europe/Berlin", "printer.lan", "nas.lan", `id="stats-at"`}},
		{name: "before the first sweep", query: "?at=" + local(30*time.Minute), status: http.StatusOK,
			want: []string{"No device was known then.", "<dt>Devices</dt><dd>0</dd>"}},
		{name: "after the first sweep", query: "?at=" + local(90*time.Minute), status: http.StatusOK,
			want: []string{"printer.lan", "nas.lan", "10.0.0.3", "<dt>Devices</dt><dd>3</dd>"}, not: []string{"Group storage"}},
		{name: "after the edit", query: "?at=" + local(121*time.Minute), status: http.StatusOK,
			want: []string{"<dt>Group storage</dt><dd>1</dd>"}},
		{name: "an RFC 3339 instant", query: "?at=" + url.QueryEscape(t0.Add(90*time.Minute).Format(time.RFC3339)), status: http.StatusOK,
			want: []string{"<dt>Devices</dt><dd>3</dd>"}},
		{name: "changes: devices added", query: "?from=" + local(30*time.Minute) + "&to=" + local(90*time.Minute), status: http.StatusOK,
			want: []string{`id="diff-added"`, "printer.lan", "nas.lan"}},
		{name: "changes: the edit", query: "?from=" + local(90*time.Minute) + "&to=" + local(121*time.Minute), status: http.StatusOK,
			want: []string{`id="diff-changed"`, "<td>label</td><td>—</td><td>Big NAS</td>", "<td>group</td><td>—</td><td>storage</td>"}},
		{name: "not a time", query: "?at=yesterday", status: http.StatusBadRequest, want: []string{"is not a time"}},
		{name: "from without to", query: "?from=" + local(time.Hour), status: http.StatusBadRequest, want: []string{"give both"}},
		{name: "to before from", query: "?from=" + local(time.Hour) + "&to=" + local(0), status: http.StatusBadRequest,
			want: []string{"must not be before"}},
		{name: "unknown parameter", query: "?when=now", status: http.StatusBadRequest, want: []string{"Unknown query parameter"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := c.get("/history" + tc.query)
			wantStatus(t, w, tc.status, tc.want...)
			body := htmlUnescape(w.Body.String())
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("body has %q", n)
				}
			}
		})
	}
	// The nav links the page.
	wantStatus(t, c.get("/devices"), http.StatusOK, `href="/history"`)

	// A purge that compacts history before a cut: earlier instants say
	// so, with the earliest instant that works, and that link works.
	cut := t0.Add(100 * time.Minute)
	s.clock.Advance(time.Minute)
	p := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{}}, s.clock.Now())
	p.Source = "retention"
	s.appendWait(p)
	for _, q := range []string{"?at=" + local(30*time.Minute), "?from=" + local(30*time.Minute) + "&to=" + local(time.Hour)} {
		w := c.get("/history" + q)
		wantStatus(t, w, http.StatusGone, `id="history-problem"`, "is before the kept history", "The earliest instant that can be shown is")
		m := regexpMust(`id="earliest" href="([^"]+)"|href="([^"]+)" id="earliest"`).FindStringSubmatch(w.Body.String())
		if m == nil {
			t.Fatalf("no link to the earliest instant:\n%s", w.Body.String())
		}
		link := htmlUnescape(m[1] + m[2])
		wantStatus(t, c.get(link), http.StatusOK, `id="stats-at"`)
	}
}

// onlyInventory and onlyCommander hide the optional History and Merger
// of the real parts.
type onlyInventory struct{ ui.Inventory }

func (o onlyInventory) ListScans(ctx context.Context, f projections.ScanFilter) (projections.Page[projections.Scan], error) {
	return o.Inventory.(ui.ScanLog).ListScans(ctx, f)
}

type onlyCommander struct{ ui.Commander }

// TestWithoutHistoryOrMerger: without them there is no History page, no
// menu entry and no merge form, and their paths answer 404.
func TestWithoutHistoryOrMerger(t *testing.T) {
	s, c := seeded(t, stackOpts{
		wrapInv: func(i ui.Inventory) ui.Inventory { return onlyInventory{i} },
		wrapCmd: func(c ui.Commander) ui.Commander { return onlyCommander{c} },
	})
	a, b := s.deviceID("10.0.0.1"), s.deviceID("10.0.0.2")
	w := c.get("/devices/" + a)
	wantStatus(t, w, http.StatusOK, "printer.lan")
	for _, n := range []string{`href="/history"`, "Merge another device", "/merge"} {
		if strings.Contains(w.Body.String(), n) {
			t.Errorf("device page has %q", n)
		}
	}
	wantStatus(t, c.get("/history"), http.StatusNotFound, "keeps no history")
	wantStatus(t, c.post("/devices/"+a+"/merge", url.Values{"device": {b}}), http.StatusNotFound, "not available")
	if _, err := s.inv.Device(context.Background(), b); err != nil {
		t.Fatalf("b after a refused merge: %v", err)
	}
}
