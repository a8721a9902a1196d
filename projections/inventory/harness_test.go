package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/scanlog"
)

// t0 is the start of every scenario.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const lab = "10.0.0.0/24"

// fakeVendor names two OUIs.
func fakeVendor(mac net.HardwareAddr) string {
	switch {
	case len(mac) >= 3 && mac[0] == 0x00 && mac[1] == 0x11 && mac[2] == 0x22:
		return "Acme Printers"
	case len(mac) >= 3 && mac[0] == 0x3c && mac[1] == 0x22 && mac[2] == 0xfb:
		return "Apple, Inc."
	}
	return ""
}

// harness applies events to an Inventory over a bbolt file, one
// transaction per event, as the runner would with a batch of one.
type harness struct {
	t    testing.TB
	db   *bolt.DB
	inv  *Inventory
	opts Options
	seq  uint64
	// scans is the scan log, fed the same events: the inventory's tests
	// check what each run shows there too.
	scans *scanlog.Log
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	if opts.Vendor == nil {
		opts.Vendor = fakeVendor
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "inv.db"), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	h := &harness{t: t, db: db, opts: opts, scans: scanlog.New(nil)}
	h.inv = h.load()
	err = h.db.Update(func(tx *bolt.Tx) error {
		for _, b := range h.scans.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return h.scans.Load(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// load creates the buckets and returns a new Inventory loaded from them.
func (h *harness) load() *Inventory {
	h.t.Helper()
	inv, err := New(h.opts)
	if err != nil {
		h.t.Fatal(err)
	}
	err = h.db.Update(func(tx *bolt.Tx) error {
		for _, b := range inv.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return inv.Load(tx)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

// envelope builds the next event.
func (h *harness) envelope(kind string, payload any, at time.Time, source, actor, device string) events.Envelope {
	ev := events.MustNew(kind, payload, at)
	h.seq++
	ev.Seq = h.seq
	ev.ID = fmt.Sprintf("%032x", h.seq)
	ev.Source, ev.Actor, ev.Device = source, actor, device
	return ev
}

// applyEv applies one envelope and flushes.
func (h *harness) applyEv(ev events.Envelope) {
	h.t.Helper()
	err := h.db.Update(func(tx *bolt.Tx) error {
		if err := h.inv.Apply(tx, ev); err != nil {
			return err
		}
		if err := h.scans.Apply(tx, ev); err != nil {
			return err
		}
		if err := h.scans.Flush(tx); err != nil {
			return err
		}
		return h.inv.Flush(tx)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) sweep(s events.SweepCompleted) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindSweepCompleted, s, s.Finished, "sweep:lab", "", ""))
}

func (h *harness) ports(p events.PortScanCompleted) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindPortScanCompleted, p, p.Finished, "ports:lab", "", ""))
}

func (h *harness) tick(at time.Time) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindClockTicked, events.ClockTicked{At: at}, at, SourceClock, SourceClock, ""))
}

func (h *harness) edit(id, actor string, e events.DeviceEdited, at time.Time) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindDeviceEdited, e, at, "api", actor, id))
}

func (h *harness) watch(id, actor string, on bool, at time.Time) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: on}, at, "api", actor, id))
}

func (h *harness) purge(p events.RetentionPurged, at time.Time) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindRetentionPurged, p, at, SourceRetention, SourceRetention, ""))
}

// sweepAt is a complete sweep of lab finishing at fin, started 10s before.
func sweepAt(fin time.Time, hosts ...events.SweepHost) events.SweepCompleted {
	return events.SweepCompleted{
		ScanID: "s" + fin.Format("150405"), Started: fin.Add(-10 * time.Second), Finished: fin,
		Networks: []string{lab}, ProbesSent: 254, Complete: true, Hosts: hosts,
	}
}

// incomplete is sweepAt marked failed.
func incomplete(fin time.Time, hosts ...events.SweepHost) events.SweepCompleted {
	s := sweepAt(fin, hosts...)
	s.Complete = false
	s.Errors = []string{"send: network is unreachable"}
	return s
}

// host builds a responder of lab; names are "source=name".
func host(ip, mac string, names ...string) events.SweepHost {
	h := events.SweepHost{IP: ip, Network: lab, MAC: mac, Via: "icmp", RTTMicros: 800}
	for _, n := range names {
		src, name, _ := strings.Cut(n, "=")
		h.Names.Set(src, name)
	}
	return h
}

// entries returns the whole change log, oldest first.
func (h *harness) entries() []projections.ChangeEntry {
	h.t.Helper()
	var all []projections.ChangeEntry
	f := projections.EventFilter{Limit: MaxLimit}
	for {
		p, err := h.inv.ListEvents(context.Background(), f)
		if err != nil {
			h.t.Fatal(err)
		}
		all = append(all, p.Items...)
		if p.NextCursor == nil {
			break
		}
		f.Cursor = *p.NextCursor
	}
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	return all
}

// kinds lists the kinds of entries.
func kinds(es []projections.ChangeEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}

// devices returns the device list, which must hold exactly n devices.
func (h *harness) devices(n int) []projections.Device {
	h.t.Helper()
	p, err := h.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(p.Items) != n {
		h.t.Fatalf("got %d devices, want %d: %s", len(p.Items), n, js(p.Items))
	}
	return p.Items
}

// device returns the device holding ip (current address).
func (h *harness) device(ip string) projections.Device {
	h.t.Helper()
	p, err := h.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, d := range p.Items {
		for _, a := range d.Addresses {
			if a.IP == ip && a.RetiredAt == nil {
				return d
			}
		}
	}
	h.t.Fatalf("no device at %s: %s", ip, js(p.Items))
	return projections.Device{}
}

// snapshotAll returns every query's answer as JSON, for equality checks.
func snapshotAll(t testing.TB, inv *Inventory) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	add := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&b, "== %s\n%s\n", name, js(v))
	}
	for _, s := range []string{"name", "-name", "ip", "-ip", "first_seen", "-first_seen", "last_seen", "-last_seen"} {
		p, err := inv.ListDevices(ctx, projections.DeviceFilter{Sort: s, Limit: MaxLimit})
		add("devices "+s, p, err)
		for _, d := range p.Items {
			one, err := inv.Device(ctx, d.ID)
			add("device "+d.ID, one, err)
			ev, err := inv.ListEvents(ctx, projections.EventFilter{Device: d.ID, Limit: MaxLimit})
			add("events of "+d.ID, ev, err)
		}
	}
	ev, err := inv.ListEvents(ctx, projections.EventFilter{Limit: MaxLimit})
	add("events", ev, err)
	st, err := inv.Stats(ctx)
	add("stats", st, err)
	gr, err := inv.Groups(ctx)
	add("groups", gr, err)
	dl, ok := inv.NextPresenceDeadline()
	add("deadline", []any{dl, ok}, nil)
	return b.String()
}

// checkReload asserts that a fresh Inventory loaded from the rows
// answers every query exactly as the live one.
func (h *harness) checkReload() {
	h.t.Helper()
	live := snapshotAll(h.t, h.inv)
	again := snapshotAll(h.t, h.load())
	if d := cmp.Diff(live, again); d != "" {
		h.t.Fatalf("reloaded inventory differs from the live one (-live +reloaded):\n%s", d)
	}
}

func js(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }
