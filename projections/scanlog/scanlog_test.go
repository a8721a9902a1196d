package scanlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// harness is a loaded Log over a fresh database, fed envelopes in order.
type harness struct {
	t   testing.TB
	db  *bolt.DB
	log *Log
	seq uint64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "scans.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	h := &harness{t: t, db: db, log: New(nil)}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range h.log.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return h.log.Load(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) envelope(kind string, payload any, at time.Time, source string) events.Envelope {
	ev := events.MustNew(kind, payload, at)
	h.seq++
	ev.Seq, ev.ID, ev.Source = h.seq, fmt.Sprintf("ev%03d", h.seq), source
	return ev
}

func (h *harness) apply(ev events.Envelope) error {
	return h.db.Update(func(tx *bolt.Tx) error {
		if err := h.log.Apply(tx, ev); err != nil {
			return err
		}
		return h.log.Flush(tx) // as the runner does after each batch
	})
}

func (h *harness) mustApply(kind string, payload any, at time.Time, source string) {
	h.t.Helper()
	if err := h.apply(h.envelope(kind, payload, at, source)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) all() []projections.Scan {
	h.t.Helper()
	var out []projections.Scan
	f := projections.ScanFilter{Limit: 2}
	for {
		p, err := h.log.ListScans(context.Background(), f)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, p.Items...)
		if p.NextCursor == nil {
			return out
		}
		f.Cursor = *p.NextCursor
	}
}

// Each run's event makes one entry, read from its header alone.
func TestEntries(t *testing.T) {
	host := func(ip string) events.SweepHost { return events.SweepHost{IP: ip, Network: "10.0.0.0/24", Via: "icmp"} }
	cases := []struct {
		name    string
		kind    string
		payload any
		source  string
		want    projections.Scan
	}{{
		name: "a sweep written whole, its network made canonical", kind: events.KindSweepCompleted, source: "sweep:lab",
		payload: events.SweepCompleted{ScanID: "s1", Started: t0, Finished: t0.Add(10 * time.Second), Networks: []string{"10.0.0.7/24", "nonsense"},
			ProbesSent: 254, Complete: true, Hosts: []events.SweepHost{host("10.0.0.1"), host("10.0.0.2")}},
		want: projections.Scan{ID: "s1", Source: "sweep:lab", Kind: "devices", Started: t0, Finished: t0.Add(10 * time.Second), DurationMS: 10000,
			Networks: []string{"10.0.0.0/24", "nonsense"}, ProbesSent: 254, HostsFound: 2, Complete: true, Errors: []string{}},
	}, {
		name: "a port scan: the addresses with an open port", kind: events.KindPortScanCompleted, source: "ports:lab",
		payload: events.PortScanCompleted{ScanID: "p1", Started: t0, Finished: t0.Add(time.Minute), Ports: "22,80", Targets: 3, ProbesSent: 6, Complete: true,
			Results: []events.PortResult{{IP: "10.0.0.1", Open: []uint16{22}}, {IP: "10.0.0.2"}, {IP: "10.0.0.3", Open: []uint16{22, 80}}}},
		want: projections.Scan{ID: "p1", Source: "ports:lab", Kind: "ports", Started: t0, Finished: t0.Add(time.Minute), DurationMS: 60000,
			Networks: []string{}, ProbesSent: 6, HostsFound: 2, Complete: true, Errors: []string{}},
	}, {
		name: "a plugin read: its hosts and rows", kind: events.KindPluginRead, source: "routerapi:core",
		payload: events.PluginRead{ScanID: "r1", Kind: "routerapi", Started: t0, Finished: t0.Add(1500 * time.Millisecond), Complete: false,
			Errors: []string{"ip/arp: HTTP 500"}, Rows: 40, Hosts: 12, Base: 3},
		want: projections.Scan{ID: "r1", Source: "routerapi:core", Kind: "routerapi", Started: t0, Finished: t0.Add(1500 * time.Millisecond), DurationMS: 1500,
			Networks: []string{}, HostsFound: 12, Rows: 40, Errors: []string{"ip/arp: HTTP 500"}},
	}, {
		name: "a DNS read: distinct clients, entries as rows", kind: events.KindDNSRead, source: "dnsfilter1:pi",
		payload: events.DNSRead{ScanID: "d1", Kind: "dnsfilter1", Started: t0, Finished: t0.Add(time.Second), Complete: true, Entries: 10,
			Rows: []events.DNSRow{{Hour: t0.Unix(), Client: "10.0.0.5"}, {Hour: t0.Unix(), Client: "10.0.0.6"}, {Hour: t0.Unix() + 3600, Client: "10.0.0.5"}}},
		want: projections.Scan{ID: "d1", Source: "dnsfilter1:pi", Kind: "dnsfilter1", Started: t0, Finished: t0.Add(time.Second), DurationMS: 1000,
			Networks: []string{}, HostsFound: 2, Rows: 10, Complete: true, Errors: []string{}},
	}, {
		name: "a flow window: exporters, datagrams, flows, drops each in its unit, loss", kind: events.KindTrafficRecorded, source: "flowlistener:edge",
		payload: events.TrafficRecorded{ScanID: "w1", Started: t0, Finished: t0.Add(time.Minute), Complete: true, Listen: ":2055", Datagrams: 120,
			Flows: 3000, LostFlows: 40, Drops: map[string]uint64{"not_exporter": 7, "malformed": 2, "no_template": 3, "no_address": 1, "table_full": 50},
			Exporters: []events.TrafficExporter{{Addr: "10.0.0.1", Versions: []int{9}, Templates: 4, Datagrams: 120, Flows: 3000, LostFlows: 40, Sampling: 1}},
			Rows:      []events.TrafficRow{{Src: "10.0.0.5", Dst: "8.8.8.8", Proto: 17, Port: 53, Bytes: 900, Packets: 10, Flows: 5}}},
		want: projections.Scan{ID: "w1", Source: "flowlistener:edge", Kind: "flows", Started: t0, Finished: t0.Add(time.Minute), DurationMS: 60000,
			Networks: []string{"10.0.0.1 (v9; 4 templates)"}, ProbesSent: 120, HostsFound: 1, Rows: 3000, Complete: true,
			Errors: []string{"dropped 7 datagrams from addresses not in exporters; 2 malformed sets or templates; 3 data sets without a template; " +
				"1 flow record without addresses; 50 flows past the window's row limit", "estimated 40 flows lost (sequence gaps)"}},
	}, {
		name: "a flow window: exporters' versions, templates and sampling; drops the listener already said", kind: events.KindTrafficRecorded, source: "flowlistener:edge",
		payload: events.TrafficRecorded{ScanID: "w2", Started: t0, Finished: t0.Add(time.Minute), Complete: false, Final: true, Datagrams: 1 << 40, Flows: 9,
			Errors: []string{"dropped 1 datagrams from addresses not in exporters (first: [203.0.113.9])"},
			Drops:  map[string]uint64{"not_exporter": 1, "short": 1, "version": 2, "template_expired": 1, "limits": 3, "new_reason": 5, "zero": 0},
			Exporters: []events.TrafficExporter{
				{Addr: "192.0.2.1", Versions: []int{5}, Sampling: 1},
				{Addr: "192.0.2.2", Versions: []int{9, 10}, Templates: 1, Sampling: 100, Restarts: 1},
				{Addr: "198.51.100.2", Versions: []int{10}, Restarts: 2, Held: 3},
				{Addr: "2001:db8::1"},
			}},
		want: projections.Scan{ID: "w2", Source: "flowlistener:edge", Kind: "flows", Started: t0, Finished: t0.Add(time.Minute), DurationMS: 60000,
			Networks: []string{"192.0.2.1 (v5)", "192.0.2.2 (v9/IPFIX; 1 template; sampling 1:100; 1 restart)",
				"198.51.100.2 (IPFIX; 0 templates; 2 restarts; 3 data sets waiting for their templates)", "2001:db8::1"},
			ProbesSent: 1<<31 - 1, HostsFound: 4, Rows: 9,
			Errors: []string{"dropped 1 datagrams from addresses not in exporters (first: [203.0.113.9])",
				"dropped 1 datagram shorter than its header says; 2 datagrams of an unknown version; 1 data set whose template expired; " +
					"3 datagrams or templates over the limits; 5 counted as new_reason"}},
	}, {
		name: "a failed sweep: its reason, under the entries' kind", kind: events.KindScanFailed, source: "sweep:lab",
		payload: events.ScanFailed{ScanID: "f1", Kind: "sweep", Started: t0, Finished: t0.Add(2 * time.Second), Reason: "socket: operation not permitted"},
		want: projections.Scan{ID: "f1", Source: "sweep:lab", Kind: "devices", Started: t0, Finished: t0.Add(2 * time.Second), DurationMS: 2000,
			Networks: []string{}, Errors: []string{"socket: operation not permitted"}},
	}, {
		name: "a failed plugin read keeps its kind", kind: events.KindScanFailed, source: "rpcrouter:ap",
		payload: events.ScanFailed{Kind: "rpcrouter", Started: t0, Finished: t0.Add(5 * time.Second), Reason: "timeout"},
		want: projections.Scan{ID: "ev001", Source: "rpcrouter:ap", Kind: "rpcrouter", Started: t0, Finished: t0.Add(5 * time.Second), DurationMS: 5000,
			Networks: []string{}, Errors: []string{"timeout"}},
	}, {
		name: "no times: finished when appended, started then too", kind: events.KindSweepCompleted, source: "sweep:lab",
		payload: events.SweepCompleted{ScanID: "s3", Networks: []string{}, Complete: true},
		want: projections.Scan{ID: "s3", Source: "sweep:lab", Kind: "devices", Started: t0.Add(time.Hour), Finished: t0.Add(time.Hour),
			Networks: []string{}, Complete: true, Errors: []string{}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustApply(c.kind, c.payload, t0.Add(time.Hour), c.source)
			got := h.all()
			if diff := cmp.Diff([]projections.Scan{c.want}, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

// Events that are not runs make no entry; a run whose payload does not
// decode fails the apply with its seq and kind and writes nothing.
func TestOtherEventsAndBadPayloads(t *testing.T) {
	h := newHarness(t)
	h.mustApply(events.KindDeviceEdited, events.DeviceEdited{Label: ptr("nas")}, t0, "api")
	h.mustApply(events.KindClockTicked, events.ClockTicked{At: t0}, t0, "clock")
	if got := h.all(); len(got) != 0 {
		t.Fatalf("entries of events that are not runs: %v", got)
	}
	for _, kind := range []string{events.KindSweepCompleted, events.KindPortScanCompleted, events.KindPluginRead, events.KindDNSRead,
		events.KindTrafficRecorded, events.KindScanFailed, events.KindRetentionPurged} {
		ev := h.envelope(kind, map[string]any{}, t0, "x")
		ev.Payload = json.RawMessage(`{"hosts": 5, "results": "no", "same": {}, "history_before": 3, "drops": [1], "kind": 7}`)
		err := h.apply(ev)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d", ev.Seq)) {
			t.Errorf("%s with a bad payload: %v", kind, err)
		}
	}
	if got := h.all(); len(got) != 0 {
		t.Fatalf("a bad payload wrote %v", got)
	}
}

func ptr[T any](v T) *T { return &v }

// Pages run newest first by finish time; source and start-time filters
// skip without ending a page early; a cursor the log did not issue is
// refused.
func TestListScans(t *testing.T) {
	h := newHarness(t)
	for k := range 5 {
		at := t0.Add(time.Duration(k) * 5 * time.Minute)
		h.mustApply(events.KindSweepCompleted, events.SweepCompleted{ScanID: fmt.Sprintf("s%d", k), Started: at, Finished: at.Add(time.Second)}, at, "sweep:lab")
	}
	h.mustApply(events.KindPortScanCompleted, events.PortScanCompleted{ScanID: "p", Started: t0.Add(time.Hour), Finished: t0.Add(time.Hour + time.Minute)}, t0, "ports:lab")
	ctx := context.Background()
	ids := func(p projections.Page[projections.Scan]) string {
		var s []string
		for _, it := range p.Items {
			s = append(s, it.ID)
		}
		return strings.Join(s, ",")
	}
	p, err := h.log.ListScans(ctx, projections.ScanFilter{Limit: 2})
	if err != nil || ids(p) != "p,s4" || p.NextCursor == nil {
		t.Fatalf("page 1 = %s, %v", ids(p), err)
	}
	p2, err := h.log.ListScans(ctx, projections.ScanFilter{Limit: 10, Cursor: *p.NextCursor})
	if err != nil || ids(p2) != "s3,s2,s1,s0" || p2.NextCursor != nil {
		t.Fatalf("page 2 = %s, %v", ids(p2), err)
	}
	since, until := t0.Add(9*time.Minute), t0.Add(16*time.Minute)
	p3, err := h.log.ListScans(ctx, projections.ScanFilter{Source: "sweep:lab", Since: &since, Until: &until, Limit: 1})
	if err != nil || ids(p3) != "s3" || p3.NextCursor == nil {
		t.Fatalf("window = %s, %v", ids(p3), err)
	}
	p4, err := h.log.ListScans(ctx, projections.ScanFilter{Source: "sweep:lab", Since: &since, Until: &until, Cursor: *p3.NextCursor})
	if err != nil || ids(p4) != "s2" || p4.NextCursor != nil {
		t.Fatalf("window page 2 = %s, %v", ids(p4), err)
	}
	if p5, _ := h.log.ListScans(ctx, projections.ScanFilter{Source: "nobody"}); len(p5.Items) != 0 {
		t.Errorf("source filter: %s", ids(p5))
	}
	for _, bad := range []string{"AAAA", "not base64!", strings.Repeat("A", 40)} {
		if _, err := h.log.ListScans(ctx, projections.ScanFilter{Cursor: bad}); !errors.Is(err, projections.ErrBadCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	if _, err := New(nil).ListScans(ctx, projections.ScanFilter{}); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("before Load: %v", err)
	}
}

// A purge removes the entries that finished before its history cutoff,
// the ones RowsBefore counted; one without a history cutoff keeps all.
func TestPurge(t *testing.T) {
	h := newHarness(t)
	for k := range 6 {
		at := t0.Add(time.Duration(k) * time.Hour)
		h.mustApply(events.KindSweepCompleted, events.SweepCompleted{ScanID: fmt.Sprintf("s%d", k), Started: at, Finished: at}, at, "sweep:lab")
	}
	cut := t0.Add(2*time.Hour + time.Minute)
	n, err := h.log.RowsBefore(context.Background(), cut)
	if err != nil || n != 3 {
		t.Fatalf("RowsBefore = %d, %v; want 3", n, err)
	}
	later := t0.Add(90 * 24 * time.Hour)
	h.mustApply(events.KindRetentionPurged, events.RetentionPurged{TrafficBefore: &later, Counts: map[string]int{"traffic_rows": 1}}, t0, "retention")
	if got := h.all(); len(got) != 6 {
		t.Fatalf("a purge without a history cutoff removed entries: %d left", len(got))
	}
	h.mustApply(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{"scans": 3}}, t0, "retention")
	got := h.all()
	if len(got) != 3 || got[len(got)-1].ID != "s3" {
		t.Fatalf("after the purge: %v", got)
	}
	if n, _ := h.log.RowsBefore(context.Background(), cut); n != 0 {
		t.Errorf("RowsBefore after the purge = %d", n)
	}
}

// A source name longer than the row header holds is cut there for the
// filter, and kept whole in the entry.
func TestLongSource(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("s", 300)
	h.mustApply(events.KindScanFailed, events.ScanFailed{Kind: "sweep", Started: t0, Finished: t0, Reason: "x"}, t0, long)
	got := h.all()
	if len(got) != 1 || got[0].Source != long {
		t.Fatalf("%v", got)
	}
	p, err := h.log.ListScans(context.Background(), projections.ScanFilter{Source: long[:255]})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("filter by the cut name: %v %v", p, err)
	}
}

// A sweep written as the difference from its source's last sweep counts
// the responders it repeats; one whose base the log does not hold (not
// the source's last sweep, or references past its responders) is shown
// as the inventory applies it: its whole hosts only, incomplete, saying
// why. The last sweeps survive a reload.
func TestSweepDifference(t *testing.T) {
	h := newHarness(t)
	host := func(ip string) events.SweepHost { return events.SweepHost{IP: ip, Via: "icmp"} }
	sweep := func(id string, base uint64, same []int64, hosts ...events.SweepHost) {
		h.t.Helper()
		h.mustApply(events.KindSweepCompleted, events.SweepCompleted{ScanID: id, Started: t0, Finished: t0.Add(time.Duration(h.seq+1) * time.Minute),
			Networks: []string{"10.0.0.0/24"}, Complete: true, Errors: []string{"e"}, Base: base, Same: same, Hosts: hosts}, t0, "sweep:lab")
	}
	sweep("whole", 0, nil, host("10.0.0.1"), host("10.0.0.2"), host("10.0.0.3"), host("10.0.0.4")) // seq 1, 4 responders
	sweep("diff", 1, []int64{0, 500, 3, 610}, host("10.0.0.9"))                                    // seq 2, 3 responders
	sweep("old base", 1, []int64{0, 500}, host("10.0.0.9"))                                        // seq 3: base is not the last
	sweep("past the end", 3, []int64{1, 500}, host("10.0.0.7"), host("10.0.0.8"))                  // seq 4: seq 3 kept 1 responder
	sweep("odd", 4, []int64{0}, host("10.0.0.7"))                                                  // seq 5
	reloaded := New(nil)
	if err := h.db.View(reloaded.Load); err != nil {
		t.Fatal(err)
	}
	h.log = reloaded
	sweep("after reload", 5, []int64{0, 1}) // seq 6: seq 5 kept its 1 whole host
	type got struct {
		ID       string
		Hosts    int
		Complete bool
		Errors   string
	}
	var all []got
	for _, s := range h.all() {
		all = append(all, got{s.ID, s.HostsFound, s.Complete, strings.Join(s.Errors, "; ")})
	}
	want := []got{
		{"after reload", 1, true, "e"},
		{"odd", 1, false, "e; " + baseMissing},
		{"past the end", 2, false, "e; " + baseMissing},
		{"old base", 1, false, "e; " + baseMissing},
		{"diff", 3, true, "e"},
		{"whole", 4, true, "e"},
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestPrepareSharedEqualsPrepare: an entry made from the payload the
// runner decodes once (PrepareShared) is the entry Prepare makes from the
// event itself, for every kind the scan log shares.
func TestPrepareSharedEqualsPrepare(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	mk := func(kind string, payload any) events.Envelope {
		e := events.MustNew(kind, payload, at)
		e.Seq, e.Source = 42, "src:x"
		return e
	}
	tests := []struct {
		name string
		ev   events.Envelope
	}{
		{"sweep", mk(events.KindSweepCompleted, events.SweepCompleted{ScanID: "s1", Started: at.Add(-time.Second), Finished: at,
			Networks: []string{"10.0.0.7/24"}, ProbesSent: 254, Complete: true, Hosts: []events.SweepHost{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}})},
		{"sweep with errors, no times", mk(events.KindSweepCompleted, events.SweepCompleted{ScanID: "s2", Errors: []string{"eth0: down"}})},
		{"sweep as a difference", mk(events.KindSweepCompleted, events.SweepCompleted{ScanID: "s3", Finished: at, Complete: true, Base: 7,
			Same: []int64{0, 300, 1, 250}, Hosts: []events.SweepHost{{IP: "10.0.0.9"}}})},
		{"port scan", mk(events.KindPortScanCompleted, events.PortScanCompleted{ScanID: "p1", Started: at.Add(-time.Minute), Finished: at,
			Ports: "22,80", ProbesSent: 6, Complete: false, Errors: []string{"timeout"},
			Results: []events.PortResult{{IP: "10.0.0.1", Open: []uint16{22}}, {IP: "10.0.0.2"}, {IP: "10.0.0.3", Open: []uint16{22, 80}}}})},
		{"plugin read", mk(events.KindPluginRead, events.PluginRead{ScanID: "r1", Kind: "routerapi", Started: at.Add(-time.Second), Finished: at,
			Complete: true, Rows: 12, Hosts: 3, Set: []events.ReadHost{{MAC: "02:00:00:00:00:01"}}})},
		{"plugin read as a difference", mk(events.KindPluginRead, events.PluginRead{ScanID: "r2", Kind: "rpcrouter", Finished: at,
			Complete: false, Errors: []string{"dhcp: refused"}, Rows: 4, Hosts: 9, Base: 40, Gone: []string{"02:00:00:00:00:02"}})},
	}
	l := New(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, ok := l.SharedPayload(tc.ev.Kind)
			if !ok {
				t.Fatalf("%s is not shared", tc.ev.Kind)
			}
			payload, err := reg.Decode(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			own, err := l.Prepare(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			shared, err := l.PrepareShared(tc.ev, payload)
			if err != nil {
				t.Fatal(err)
			}
			a, b := own.(*prepared), shared.(*prepared)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("Prepare:\n%#v\nPrepareShared:\n%#v", a, b)
			}
		})
	}
	if _, ok := l.SharedPayload(events.KindClockTicked); ok {
		t.Error("clock ticks are shared")
	}
}

// A batch's rows are written at Flush in key order; a purge in the same
// batch sees the rows before it; a batch that fails leaves nothing
// behind once the runner has reloaded the log.
func TestRowsOfABatch(t *testing.T) {
	h := newHarness(t)
	sweep := func(id string, at time.Time) events.Envelope {
		return h.envelope(events.KindSweepCompleted, events.SweepCompleted{ScanID: id, Started: at, Finished: at}, at, "sweep:lab")
	}
	cut := t0.Add(90 * time.Minute)
	batch := []events.Envelope{
		sweep("late", t0.Add(3*time.Hour)), // out of finish-time order
		sweep("old1", t0),
		sweep("old2", t0.Add(time.Hour)),
		h.envelope(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{"scans": 2}}, t0.Add(4*time.Hour), "retention"),
		sweep("new", t0.Add(2*time.Hour)),
	}
	err := h.db.Update(func(tx *bolt.Tx) error {
		for _, ev := range batch {
			if err := h.log.Apply(tx, ev); err != nil {
				return err
			}
		}
		return h.log.Flush(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range h.all() {
		ids = append(ids, s.ID)
	}
	if want := []string{"late", "new"}; !slices.Equal(ids, want) {
		t.Fatalf("entries %v, want %v (newest first)", ids, want)
	}

	failed := errors.New("another projection failed")
	err = h.db.Update(func(tx *bolt.Tx) error {
		if err := h.log.Apply(tx, sweep("lost", t0.Add(5*time.Hour))); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	// The runner reloads every projection after a failed batch.
	if err := h.db.View(h.log.Load); err != nil {
		t.Fatal(err)
	}
	h.mustApply(events.KindSweepCompleted, events.SweepCompleted{ScanID: "after", Started: t0.Add(6 * time.Hour), Finished: t0.Add(6 * time.Hour)}, t0.Add(6*time.Hour), "sweep:lab")
	ids = ids[:0]
	for _, s := range h.all() {
		ids = append(ids, s.ID)
	}
	if want := []string{"after", "late", "new"}; !slices.Equal(ids, want) {
		t.Fatalf("after a failed batch: entries %v, want %v", ids, want)
	}
}
