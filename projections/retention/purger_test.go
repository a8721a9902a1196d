package retention

import (
	"context"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// recordingCompactor records the runner calls a purger makes.
type recordingCompactor struct {
	waited  []uint64
	compact []time.Time
}

func (r *recordingCompactor) WaitFor(_ context.Context, seq uint64) error {
	r.waited = append(r.waited, seq)
	return nil
}

func (r *recordingCompactor) Compact(_ context.Context, before time.Time) (int, error) {
	r.compact = append(r.compact, before)
	return 7, nil
}

func TestPurgeOnce(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", "02:42:ac:00:00:05"), inventorytest.Host("10.0.0.6", "00:1b:63:00:00:06"))
	id := h.Device("10.0.0.6").ID
	h.Apply(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: true}, t0.Add(time.Minute), "api", "alice", id)
	comp := &recordingCompactor{}
	now := t0.Add(100 * 24 * time.Hour)
	clock := func() time.Time { return now }
	p, err := NewPurger(h, h.Inv, comp, Options{History: 90 * 24 * time.Hour, Devices: 90 * 24 * time.Hour, Traffic: 720 * time.Hour}, clock)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PurgeOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq == 0 || res.Counts["devices"] != 1 || len(res.Deleted) != 1 || res.Compacted != 7 {
		t.Errorf("result = %+v", res)
	}
	if len(comp.waited) != 1 || comp.waited[0] != res.Seq {
		t.Errorf("waited for %v, want %d", comp.waited, res.Seq)
	}
	if cut := now.Add(-90 * 24 * time.Hour); len(comp.compact) != 1 || !comp.compact[0].Equal(cut) {
		t.Errorf("compacted before %v, want %s", comp.compact, cut)
	}
	appended := h.Appended()
	var rp events.RetentionPurged
	if err := events.DecodeInto(appended[0], &rp); err != nil {
		t.Fatal(err)
	}
	if rp.TrafficBefore == nil || rp.DNSBefore != nil || rp.HistoryBefore == nil || appended[0].Source != inventory.SourceRetention {
		t.Errorf("purge event = %+v", rp)
	}
	if n := len(h.Devices()); n != 1 { // the watched device stays
		t.Fatalf("%d devices after the purge, want the watched one", n)
	}

	// Nothing left to remove: no event, compaction still asked for.
	res, err = p.PurgeOnce(context.Background())
	if err != nil || res.Seq != 0 || len(h.Appended()) != 1 || len(comp.compact) != 2 {
		t.Errorf("second purge: %+v %v, %d events", res, err, len(h.Appended()))
	}

	// Forever: no cutoffs, nothing to do, no compaction.
	p2, _ := NewPurger(h, h.Inv, comp, Options{}, clock)
	res, err = p2.PurgeOnce(context.Background())
	if err != nil || res.Seq != 0 || len(comp.compact) != 2 {
		t.Errorf("forever: %+v %v", res, err)
	}
	if _, err := NewPurger(h, h.Inv, comp, Options{History: -time.Hour}, clock); err == nil {
		t.Errorf("negative window accepted")
	}
}

// Hours of traffic or DNS past their retention make a purge due even
// when the inventory has nothing to remove: the event names their
// cutoffs and counts.
func TestPurgeForKeepers(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", "02:42:ac:00:00:05"))
	comp := &recordingCompactor{}
	now := t0.Add(40 * 24 * time.Hour)
	p, err := NewPurger(h, h.Inv, comp, Options{History: 90 * 24 * time.Hour, DNS: 720 * time.Hour}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var asked time.Time
	rows := 12
	p.Keepers = []Keeper{{Name: "dns_rows", Cutoff: func(rp *events.RetentionPurged) *time.Time { return rp.DNSBefore },
		RowsBefore: func(_ context.Context, before time.Time) (int, error) { asked = before; return rows, nil }}}
	res, err := p.PurgeOnce(context.Background())
	if err != nil || res.Seq == 0 || res.Counts["dns_rows"] != 12 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	if want := now.Add(-720 * time.Hour); !asked.Equal(want) {
		t.Errorf("asked for rows before %v, want %v", asked, want)
	}
	var rp events.RetentionPurged
	if err := events.DecodeInto(h.Appended()[0], &rp); err != nil || rp.DNSBefore == nil || rp.Counts["dns_rows"] != 12 {
		t.Errorf("event %+v %v", rp, err)
	}
	// Nothing past the window: no event.
	rows = 0
	if res, err := p.PurgeOnce(context.Background()); err != nil || res.Seq != 0 || len(h.Appended()) != 1 {
		t.Errorf("nothing to remove: %+v %v", res, err)
	}
}

// headedLog is an Appender that knows its head, as store.Store does.
type headedLog struct {
	Appender
	head uint64
}

func (l headedLog) Head() uint64 { return l.head }

// A purge over a log that knows its head waits for the read models to
// apply it before planning: right after a start they may still be
// catching up, and a plan on them would find nothing to remove.
func TestPurgeWaitsForTheReadModels(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", "02:42:ac:00:00:05"))
	comp := &recordingCompactor{}
	now := t0.Add(100 * 24 * time.Hour)
	p, err := NewPurger(headedLog{Appender: h, head: 41}, h.Inv, comp, Options{Devices: 90 * 24 * time.Hour}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PurgeOnce(context.Background())
	if err != nil || res.Seq == 0 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	if len(comp.waited) != 2 || comp.waited[0] != 41 || comp.waited[1] != res.Seq {
		t.Errorf("waited for %v, want the head at the start (41), then the purge (%d)", comp.waited, res.Seq)
	}
}
