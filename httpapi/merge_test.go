package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

// MergeDevices makes the fake commander a httpapi.Merger: it answers
// the target (unknown ids are ErrNotFound) and counts as an edit.
func (c *fakeCommander) MergeDevices(_ context.Context, actor, into, other string) (projections.Device, error) {
	return c.merging(actor, into, other)
}

// UnmergeDevices is MergeDevices' twin.
func (c *fakeCommander) UnmergeDevices(_ context.Context, actor, into, other string) (projections.Device, error) {
	return c.merging(actor, into, other)
}

func (c *fakeCommander) merging(actor, into, other string) (projections.Device, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.failErr != nil {
		return projections.Device{}, c.failErr
	}
	if c.fail {
		return projections.Device{}, errInternalSecret
	}
	c.inv.mu.Lock()
	defer c.inv.mu.Unlock()
	d, ok := c.inv.devices[into]
	if !ok {
		return d, projections.ErrNotFound
	}
	if _, ok := c.inv.devices[other]; !ok {
		return d, &command.Invalid{Fields: []command.FieldError{{Field: "device", Detail: fmt.Sprintf("no device has id %q", other)}}}
	}
	c.actor = actor
	return d, nil
}

// mergeInventory is the real inventory as the API reads it; the scan
// log is not this test's subject.
type mergeInventory struct{ *inventory.Inventory }

func (mergeInventory) ListScans(context.Context, projections.ScanFilter) (projections.Page[projections.Scan], error) {
	return projections.Page[projections.Scan]{Items: []projections.Scan{}}, nil
}

// mergeEnv is the API over a real store, runner, inventory and
// Commander, holding four devices found by one sweep (ids in address
// order).
func mergeEnv(t *testing.T) (*env, *store.Store, []string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.New(st, []runner.Projection{inv}, runner.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st.OnCommit(func(uint64) { run.Notify() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = st.Close() })

	sweep := events.SweepCompleted{ScanID: "s1", Started: now.Add(-10 * time.Second), Finished: now,
		Networks: []string{"10.0.0.0/24"}, ProbesSent: 254, Complete: true}
	for k, mac := range []string{"3c:22:fb:00:00:01", "02:aa:bb:00:00:02", "00:11:22:00:00:11", "00:11:22:00:00:12"} {
		sweep.Hosts = append(sweep.Hosts, events.SweepHost{IP: fmt.Sprintf("10.0.0.%d", 21+k), Network: "10.0.0.0/24", MAC: mac, Via: "icmp"})
	}
	ev := events.MustNew(events.KindSweepCompleted, sweep, now)
	ev.Source = "sweep:lab"
	out, err := st.AppendFunc(ctx, func(*bolt.Tx) ([]events.Envelope, error) { return []events.Envelope{ev}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := run.WaitFor(ctx, out[0].Seq); err != nil {
		t.Fatal(err)
	}
	page, err := inv.ListDevices(ctx, projections.DeviceFilter{Sort: "ip"})
	if err != nil || len(page.Items) != 4 {
		t.Fatalf("devices %v %v", page.Items, err)
	}
	var ids []string
	for _, d := range page.Items {
		ids = append(ids, d.ID)
	}
	cmd := &command.Commander{Log: st, Sync: run.WaitFor, Devices: inv, Now: func() time.Time { return now }}
	h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{
		Inventory: mergeInventory{inv}, Commander: cmd, Auth: &fakeAuth{}, Ready: &fakeReady{ready: true},
		Log: zerolog.New(io.Discard),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, h: h}, st, ids
}

// TestMergeEndpoints drives merge and unmerge through the whole API over
// the real write side and inventory, in order (each step sees the
// previous ones).
func TestMergeEndpoints(t *testing.T) {
	e, st, ids := mergeEnv(t)
	a, b, n1, n2 := ids[0], ids[1], ids[2], ids[3]
	post := func(path, body string) func() (int, []byte) {
		return func() (int, []byte) {
			resp, out := e.do("POST", path, body, bearer(tokWrite))
			return resp.StatusCode, out
		}
	}
	get := func(path string) func() (int, []byte) {
		return func() (int, []byte) {
			resp, out := e.do("GET", path, "", bearer(tokRead))
			return resp.StatusCode, out
		}
	}
	body := func(id string) string { return `{"device":"` + id + `"}` }
	for _, tc := range []struct {
		name    string
		call    func() (int, []byte)
		status  int
		slug    string // of a problem
		want    string // a part of the body
		appends int
	}{
		{"read token", func() (int, []byte) {
			resp, out := e.do("POST", "/api/devices/"+a+"/merge", body(b), bearer(tokRead))
			return resp.StatusCode, out
		}, 403, "read-only-token", "", 0},
		{"no token", func() (int, []byte) {
			resp, out := e.do("POST", "/api/devices/"+a+"/merge", body(b))
			return resp.StatusCode, out
		}, 401, "token-missing", "", 0},
		{"into itself", post("/api/devices/"+a+"/merge", body(a)), 400, "invalid-body", `"/device"`, 0},
		{"no device member", post("/api/devices/"+a+"/merge", `{"devices":"x"}`), 400, "invalid-body", `"/devices"`, 0},
		{"device not a string", post("/api/devices/"+a+"/merge", `{"device":7}`), 400, "invalid-body", "non-empty string", 0},
		{"unknown target", post("/api/devices/dnosuch/merge", body(a)), 404, "device-not-found", "dnosuch", 0},
		{"unknown other", post("/api/devices/"+a+"/merge", body("dnosuch")), 400, "invalid-body", `"errors":[{"pointer":"/device","detail":"no device has id \"dnosuch\"`, 0},
		{"unknown target and other", post("/api/devices/dnosuch/merge", body("dnosuch2")), 404, "device-not-found", "dnosuch", 0},
		{"unmerge unknown other", post("/api/devices/"+a+"/unmerge", body("dnosuch")), 400, "invalid-body", `"errors":[{"pointer":"/device","detail":"no device has id \"dnosuch\"`, 0},
		{"unmerge not merged", post("/api/devices/"+a+"/unmerge", body(b)), 409, "merge-refused", "not merged", 0},
		{"merge", post("/api/devices/"+a+"/merge", body(b)), 200, "", `"10.0.0.22"`, 1},
		{"merge again changes nothing", post("/api/devices/"+a+"/merge", body(b)), 200, "", `"id":"` + a + `"`, 0},
		{"read the merged device", get("/api/devices/" + b), 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"its events", get("/api/devices/" + b + "/events"), 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"its timeline", get("/api/devices/" + b + "/timeline"), 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"edit the merged device", func() (int, []byte) {
			resp, out := e.do("PATCH", "/api/devices/"+b, `{"label":"x"}`, bearer(tokWrite))
			return resp.StatusCode, out
		}, 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"watch the merged device", func() (int, []byte) {
			resp, out := e.do("PATCH", "/api/devices/"+b+"/watch", `{"watched":true}`, bearer(tokWrite))
			return resp.StatusCode, out
		}, 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"edit the target", func() (int, []byte) {
			resp, out := e.do("PATCH", "/api/devices/"+a, `{"label":"phone"}`, bearer(tokWrite))
			return resp.StatusCode, out
		}, 200, "", `"10.0.0.22"`, 1},
		{"the list leaves it out", get("/api/devices?limit=10"), 200, "", `"10.0.0.22"`, 0},
		{"the target's events show the merge", get("/api/devices/" + a + "/events?kind=device.merged"), 200, "", `"actor":"ansible (t-write)"`, 0},
		{"the target's timeline shows the merged device's history", get("/api/devices/" + a + "/timeline?since=2026-11-22T00:00:00Z&until=2026-11-23T00:00:00Z"), 200, "", "10.0.0.22", 0},
		{"into a merged device", post("/api/devices/"+b+"/merge", body(n1)), 404, "device-merged", `"merged_into":"` + a + `"`, 0},
		{"a device merged elsewhere", post("/api/devices/"+n1+"/merge", body(b)), 409, "merge-refused", "unmerge it", 0},
		{"unmerge a device merged elsewhere", post("/api/devices/"+n1+"/unmerge", body(b)), 409, "merge-refused", "not into", 0},
		{"merge the NICs", post("/api/devices/"+n1+"/merge", body(n2)), 200, "", `"10.0.0.24"`, 1},
		{"a target brings its group", post("/api/devices/"+a+"/merge", body(n1)), 200, "", `"10.0.0.24"`, 1},
		{"unmerge a device of the group", post("/api/devices/"+a+"/unmerge", body(n2)), 200, "", `"10.0.0.23"`, 1},
		{"unmerge", post("/api/devices/"+a+"/unmerge", body(b)), 200, "", `"id":"` + a + `"`, 1},
		{"unmerge again", post("/api/devices/"+a+"/unmerge", body(b)), 409, "merge-refused", "not merged", 0},
		{"the device is back", get("/api/devices/" + b), 200, "", `"10.0.0.22"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := st.Head()
			status, out := tc.call()
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, out)
			}
			if tc.slug != "" && !strings.Contains(string(out), `"urn:jocasta:problem:`+tc.slug+`"`) {
				t.Errorf("problem %s, want %s", out, tc.slug)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("body %s lacks %s", out, tc.want)
			}
			if got := int(st.Head() - head); got != tc.appends {
				t.Errorf("%d events appended, want %d", got, tc.appends)
			}
		})
	}
	// n1 is still merged into a; b and n2 are back.
	resp, out := e.do("GET", "/api/devices?limit=10", "", bearer(tokRead))
	wantStatus(t, resp, out, 200)
	list := decode[projections.Page[projections.Device]](t, out)
	var got []string
	for _, d := range list.Items {
		got = append(got, d.ID)
	}
	slices.Sort(got)
	want := []string{a, b, n2}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("devices %v, want %v (n1 still merged into a)", got, want)
	}
}

// TestMergeWhileMergedListed: while merged, the list holds the target
// only.
func TestMergeWhileMergedListed(t *testing.T) {
	e, _, ids := mergeEnv(t)
	resp, out := e.do("POST", "/api/devices/"+ids[0]+"/merge", `{"device":"`+ids[1]+`"}`, bearer(tokWrite))
	wantStatus(t, resp, out, 200)
	d := decode[projections.Device](t, out)
	if len(d.Addresses) != 2 {
		t.Errorf("merged device has addresses %+v", d.Addresses)
	}
	resp, out = e.do("GET", "/api/devices?limit=10", "", bearer(tokRead))
	wantStatus(t, resp, out, 200)
	list := decode[projections.Page[projections.Device]](t, out)
	if len(list.Items) != 3 || slices.ContainsFunc(list.Items, func(d projections.Device) bool { return d.ID == ids[1] }) {
		t.Errorf("list %+v", list.Items)
	}
	resp, out = e.do("GET", "/api/stats", "", bearer(tokRead))
	wantStatus(t, resp, out, 200)
	if st := decode[projections.Stats](t, out); st.Devices != 3 {
		t.Errorf("stats count %d devices, want 3", st.Devices)
	}
}

// TestMergeWrites: the merge endpoints are writes like the PATCHes:
// refused on a nearly full disk, and 503 when the store fails.
func TestMergeWrites(t *testing.T) {
	for _, path := range []string{"/api/devices/dev-nas/merge", "/api/devices/dev-nas/unmerge"} {
		t.Run(path, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			e.space.set(1<<20, 32<<30, nil)
			resp, body := e.do("POST", path, `{"device":"dev-phone"}`, bearer(tokWrite))
			wantProblem(t, resp, body, 507, "insufficient-storage")
			if n := e.cmd.editCount(); n != 0 {
				t.Fatalf("%d writes reached the commander", n)
			}
			e.space.set(100<<30, 200<<30, nil)
			e.cmd.mu.Lock()
			e.cmd.failErr = fmt.Errorf("%w: store: append: commit: fdatasync: input/output error", projections.ErrWriteFailed)
			e.cmd.mu.Unlock()
			resp, body = e.do("POST", path, `{"device":"dev-phone"}`, bearer(tokWrite))
			p := wantProblem(t, resp, body, 503, "store-failed")
			if strings.Contains(string(body), "fdatasync") {
				t.Fatalf("503 leaks the cause: %s", p.Detail)
			}
			e.cmd.mu.Lock()
			e.cmd.failErr = nil
			e.cmd.mu.Unlock()
			resp, body = e.do("POST", path, `{"device":"dev-phone"}`, bearer(tokWrite))
			wantStatus(t, resp, body, 200)
			if e.cmd.actor != "ansible (t-write)" {
				t.Errorf("actor %q", e.cmd.actor)
			}
		})
	}
}

// TestHistoryAtSortMatchesLive: over the real inventory, the list at an
// instant after the last change is in the live list's order, for every
// sort the list at an instant takes.
func TestHistoryAtSortMatchesLive(t *testing.T) {
	e, st, _ := mergeEnv(t)
	// Two more devices whose addresses sort otherwise as text than as
	// numbers (10.0.0.9 < 10.0.0.21 < 10.0.0.100), so that the name
	// order (a device without a name is named by its address, as text)
	// is not the ip order.
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	sweep := events.SweepCompleted{ScanID: "s2", Started: at.Add(-time.Second), Finished: at,
		Networks: []string{"10.0.0.0/24"}, ProbesSent: 254, Complete: true, Hosts: []events.SweepHost{
			{IP: "10.0.0.9", Network: "10.0.0.0/24", MAC: "00:11:22:00:00:09", Via: "icmp"},
			{IP: "10.0.0.100", Network: "10.0.0.0/24", MAC: "00:11:22:00:01:00", Via: "icmp"},
		}}
	ev := events.MustNew(events.KindSweepCompleted, sweep, at)
	ev.Source = "sweep:lab"
	if _, err := st.Append(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	ids := func(target string) []string {
		t.Helper()
		resp, out := e.do("GET", target, "", bearer(tokRead))
		wantStatus(t, resp, out, 200)
		var p struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range p.Items {
			got = append(got, d.ID)
		}
		return got
	}
	for deadline := time.Now().Add(5 * time.Second); len(ids("/api/devices")) != 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second sweep's devices were not listed within 5 s")
		}
	}
	for _, sort := range []string{"name", "-name", "ip", "-ip", "first_seen", "-first_seen"} {
		live, past := ids("/api/devices?sort="+sort), ids("/api/devices?at=2026-11-22T10:00:01Z&sort="+sort)
		if len(live) != 6 || !slices.Equal(live, past) {
			t.Errorf("sort=%s: live %v, at an instant %v", sort, live, past)
		}
	}
}
