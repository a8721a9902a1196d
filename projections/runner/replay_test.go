package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/retention"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/store"
)

func vendor(mac net.HardwareAddr) string {
	if len(mac) > 0 && mac[0] == 0x00 {
		return "Acme"
	}
	return ""
}

func newInventory(t testing.TB) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.New(inventory.Options{Vendor: vendor})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// views are the read models a replay is checked by: the inventory and
// the scan log.
type views struct {
	inv   *inventory.Inventory
	scans *scanlog.Log
}

func newViews(t testing.TB) views {
	return views{inv: newInventory(t), scans: scanlog.New(nil)}
}

func (v views) projs() []Projection { return []Projection{v.inv, v.scans} }

// scansKeeper lets the purger count the scan log's entries, as serve's
// does.
func (v views) scansKeeper() retention.Keeper {
	return retention.Keeper{Name: "scans", RowsBefore: v.scans.RowsBefore,
		Cutoff: func(rp *events.RetentionPurged) *time.Time { return rp.HistoryBefore }}
}

// dump is every query's answer as text, for equality checks.
func dump(t testing.TB, v views) string {
	t.Helper()
	inv := v.inv
	ctx := context.Background()
	var b strings.Builder
	add := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, _ := json.MarshalIndent(v, "", " ")
		fmt.Fprintf(&b, "== %s\n%s\n", name, j)
	}
	var ids []string
	for _, s := range []string{"name", "-ip", "first_seen", "-last_seen"} {
		f := projections.DeviceFilter{Sort: s, Limit: inventory.MaxLimit}
		for {
			p, err := inv.ListDevices(ctx, f)
			add("devices "+s, p.Items, err)
			if s == "name" {
				for _, d := range p.Items {
					ids = append(ids, d.ID)
				}
			}
			if p.NextCursor == nil {
				break
			}
			f.Cursor = *p.NextCursor
		}
	}
	for _, id := range ids {
		d, err := inv.Device(ctx, id)
		add("device "+id, d, err)
		w, err := inv.WatchState(id)
		add("watch "+id, w, err)
		e, err := inv.ListEvents(ctx, projections.EventFilter{Device: id, Limit: inventory.MaxLimit})
		add("events of "+id, e, err)
	}
	f := projections.EventFilter{Limit: inventory.MaxLimit}
	for {
		p, err := inv.ListEvents(ctx, f)
		add("events", p.Items, err)
		if p.NextCursor == nil {
			break
		}
		f.Cursor = *p.NextCursor
	}
	sf := projections.ScanFilter{Limit: inventory.MaxLimit}
	for {
		p, err := v.scans.ListScans(ctx, sf)
		add("scans", p.Items, err)
		if p.NextCursor == nil {
			break
		}
		sf.Cursor = *p.NextCursor
	}
	st, err := inv.Stats(ctx)
	add("stats", st, err)
	g, err := inv.Groups(ctx)
	add("groups", g, err)
	dl, ok := inv.NextPresenceDeadline()
	add("deadline", []any{dl, ok}, nil)
	return b.String()
}

// openDump opens a database file as serve would and dumps its inventory.
func openDump(t testing.TB, path string) string {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := newViews(t)
	r, err := New(st, v.projs(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dump(t, v)
}

// live is a running system: store, runner, inventory, purger.
type live struct {
	t      testing.TB
	st     *store.Store
	inv    *inventory.Inventory
	scans  *scanlog.Log
	r      *Runner
	purger *retention.Purger
	now    time.Time
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

func startLive(t testing.TB, path string, ret retention.Options) *live {
	t.Helper()
	v := newViews(t)
	l := &live{t: t, st: openStore(t, path), inv: v.inv, scans: v.scans, done: make(chan error, 1)}
	var err error
	l.r, err = New(l.st, v.projs(), Options{BatchSize: 64, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.st.OnCommit(func(uint64) { l.r.Notify() })
	l.purger, err = retention.NewPurger(l.st, l.inv, l.r, ret, func() time.Time { l.mu.Lock(); defer l.mu.Unlock(); return l.now })
	if err != nil {
		t.Fatal(err)
	}
	l.purger.Keepers = []retention.Keeper{v.scansKeeper()}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() { l.done <- l.r.Run(ctx) }()
	return l
}

func (l *live) views() views { return views{inv: l.inv, scans: l.scans} }

func (l *live) stop() {
	l.cancel()
	if err := <-l.done; !errors.Is(err, context.Canceled) {
		l.t.Fatalf("runner: %v", err)
	}
	if err := l.st.Close(); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) append(evs ...events.Envelope) {
	l.t.Helper()
	if len(evs) == 0 {
		return
	}
	out, err := l.st.Append(context.Background(), evs...)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.r.WaitFor(context.Background(), out[len(out)-1].Seq); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) purge(at time.Time) {
	l.t.Helper()
	l.mu.Lock()
	l.now = at
	l.mu.Unlock()
	if _, err := l.purger.PurgeOnce(context.Background()); err != nil {
		l.t.Fatal(err)
	}
}

func ev(kind string, payload any, at time.Time, source, actor, device string) events.Envelope {
	e := events.MustNew(kind, payload, at)
	e.Source, e.Actor, e.Device = source, actor, device
	return e
}

// scenario plays days of a small network into l, calling mark(day) at
// the end of each day. Devices come and go, move addresses, get named,
// edited and watched; some sweeps fail; ports open and close; purges run
// daily.
func scenario(l *live, days int, mark func(day int, end time.Time)) {
	const n = 24
	mac := func(k int) string { return fmt.Sprintf("00:11:22:00:00:%02x", k) }
	step := 30 * time.Minute
	ids := map[int]string{}
	for day := range days {
		for s := range 48 {
			at := t0.Add(time.Duration(day)*24*time.Hour + time.Duration(s)*step)
			var hosts []events.SweepHost
			for k := range n {
				if (k+day)%7 == 0 || (k%5 == 0 && day >= 4 && day < 9) || (k == 9 && day > 3) {
					continue // absent today; device 9 leaves for good
				}
				ip := fmt.Sprintf("10.0.0.%d", 10+k)
				if k%6 == 0 && (day/2)%2 == 1 {
					ip = fmt.Sprintf("10.0.0.%d", 100+k) // DHCP moves it every two days
				}
				h := events.SweepHost{IP: ip, Network: "10.0.0.0/24", MAC: mac(k), Via: "icmp"}
				if k%4 == 0 {
					h.Names = events.NamesOf(map[string]string{"dns": fmt.Sprintf("host%d-v%d.lab", k, day/5)})
				}
				if k%3 == 1 {
					h.Names = events.NamesOf(map[string]string{"mdns": fmt.Sprintf("dev%d.local", k)})
				}
				hosts = append(hosts, h)
			}
			if day == 1 && s == 3 {
				hosts = append(hosts, events.SweepHost{IP: "192.168.9.9", Network: "192.168.9.0/24", Via: "icmp"})
			}
			sw := events.SweepCompleted{ScanID: fmt.Sprintf("s%d-%d", day, s), Started: at.Add(-20 * time.Second), Finished: at,
				Networks: []string{"10.0.0.0/24", "192.168.9.0/24"}, ProbesSent: 508, Complete: s%7 != 3, Hosts: hosts}
			if !sw.Complete {
				sw.Hosts = sw.Hosts[:len(sw.Hosts)/2]
			}
			l.append(ev(events.KindSweepCompleted, sw, at, "sweep:lab", "", ""))
			if s%6 == 2 {
				tick := at.Add(16 * time.Minute)
				l.append(ev(events.KindClockTicked, events.ClockTicked{At: tick}, tick, "clock", "clock", ""))
			}
			if s == 20 {
				var res []events.PortResult
				for k := range 6 {
					open := []uint16{22}
					if (k+day)%2 == 0 {
						open = append(open, 80)
					}
					res = append(res, events.PortResult{IP: fmt.Sprintf("10.0.0.%d", 10+k), Open: open})
				}
				ps := events.PortScanCompleted{ScanID: fmt.Sprintf("p%d", day), Started: at.Add(time.Minute), Finished: at.Add(2 * time.Minute),
					Ports: "22,80", Targets: 6, ProbesSent: 12, Complete: true, Results: res}
				l.append(ev(events.KindPortScanCompleted, ps, ps.Finished, "ports:lab", "", ""))
			}
		}
		if day == 0 {
			p, err := l.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: 1000})
			if err != nil {
				l.t.Fatal(err)
			}
			for _, d := range p.Items {
				if d.MAC != nil {
					var k int
					fmt.Sscanf((*d.MAC)[len(*d.MAC)-2:], "%x", &k)
					ids[k] = d.ID
				}
			}
		}
		end := t0.Add(time.Duration(day+1)*24*time.Hour - time.Minute)
		label := func(s string) *string { return &s }
		switch day {
		case 1:
			l.append(ev(events.KindDeviceEdited, events.DeviceEdited{Label: label("Printer"), Group: label("office")}, end, "api", "alice", ids[1]))
			l.append(ev(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: true}, end, "api", "alice", ids[5]))
			l.append(ev(events.KindDeviceEdited, events.DeviceEdited{Notes: label("keep")}, end, "api", "bob", ids[7]))
		case 6:
			l.append(ev(events.KindDeviceEdited, events.DeviceEdited{Cleared: []string{"label"}, Type: label("printer")}, end, "api", "alice", ids[1]))
		case 10:
			l.append(ev(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: false}, end, "api", "alice", ids[5]))
		}
		l.purge(end)
		if mark != nil {
			mark(day, end)
		}
	}
}

func TestReplayEqualsLive(t *testing.T) {
	dir := t.TempDir()
	l := startLive(t, filepath.Join(dir, "live.db"), retention.Options{}) // keep everything
	var atDay3 string
	var day3 time.Time
	scenario(l, 6, func(day int, end time.Time) {
		if day == 3 {
			atDay3, day3 = dump(t, l.views()), end
		}
	})
	want := dump(t, l.views())
	ctx := context.Background()

	t.Run("whole log", func(t *testing.T) {
		out := filepath.Join(dir, "replay.db")
		if err := Replay(ctx, l.st, out, time.Time{}, newViews(t).projs(), Options{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, openDump(t, out)); diff != "" {
			t.Errorf("replay differs from live (-live +replay):\n%s", diff)
		}
	})
	t.Run("until", func(t *testing.T) {
		out := filepath.Join(dir, "until.db")
		if err := Replay(ctx, l.st, out, day3, newViews(t).projs(), Options{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(atDay3, openDump(t, out)); diff != "" {
			t.Errorf("replay --until differs from live at that time (-live +replay):\n%s", diff)
		}
	})
	t.Run("until before the first event", func(t *testing.T) {
		out := filepath.Join(dir, "empty.db")
		if err := Replay(ctx, l.st, out, t0.Add(-time.Hour), newViews(t).projs(), Options{}); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(out, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := newViews(t)
		r, _ := New(st, v.projs(), Options{})
		if err := r.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := v.inv.Stats(ctx)
		if st.Head() != 0 || s.Devices != 0 {
			t.Errorf("head %d, %d devices", st.Head(), s.Devices)
		}
		st.Close()
	})
	t.Run("output exists", func(t *testing.T) {
		out := filepath.Join(dir, "replay.db")
		if err := Replay(ctx, l.st, out, time.Time{}, newViews(t).projs(), Options{}); !errors.Is(err, ErrOutputExists) {
			t.Errorf("err = %v", err)
		}
	})
	l.stop()
}

func TestReplayAfterCompaction(t *testing.T) {
	dir := t.TempDir()
	l := startLive(t, filepath.Join(dir, "live.db"), retention.Options{
		History: 10 * 24 * time.Hour, Devices: 8 * 24 * time.Hour, Traffic: 24 * time.Hour,
	})
	var late string
	var lateT time.Time
	deleted := 0
	scenario(l, 26, func(day int, end time.Time) {
		if day == 24 {
			late, lateT = dump(t, l.views()), end
		}
		if day == 14 {
			p, err := l.inv.ListEvents(context.Background(), projections.EventFilter{Kinds: []string{projections.ChangeDeleted}})
			if err != nil {
				t.Fatal(err)
			}
			deleted = len(p.Items)
		}
	})
	if deleted != 1 {
		t.Errorf("%d device.deleted entries on day 14, want 1 (device 9)", deleted)
	}
	want := dump(t, l.views())
	if l.st.First() <= 1 {
		t.Fatalf("the log was not compacted (first = %d)", l.st.First())
	}
	snaps, _ := l.st.Snapshots()
	if len(snaps) == 0 {
		t.Fatal("no snapshot")
	}
	for _, s := range snaps {
		if s.Seq+1 < l.st.First() {
			t.Errorf("snapshot %d kept behind the compacted log (first %d)", s.Seq, l.st.First())
		}
	}
	// Device 9 left on day 4: retention deleted it (and, 10 days later,
	// the history purge took its device.deleted entry); device 0, absent
	// 5 days, stays.
	if strings.Contains(want, `"00:11:22:00:00:09"`) || !strings.Contains(want, `"00:11:22:00:00:00"`) {
		t.Error("retention did not delete exactly the device gone for good")
	}
	ctx := context.Background()

	t.Run("whole log", func(t *testing.T) {
		out := filepath.Join(dir, "replay.db")
		if err := Replay(ctx, l.st, out, time.Time{}, newViews(t).projs(), Options{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, openDump(t, out)); diff != "" {
			t.Errorf("replay differs from live (-live +replay):\n%s", diff)
		}
	})
	t.Run("until after the compacted horizon", func(t *testing.T) {
		out := filepath.Join(dir, "late.db")
		if err := Replay(ctx, l.st, out, lateT, newViews(t).projs(), Options{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(late, openDump(t, out)); diff != "" {
			t.Errorf("replay --until differs (-live +replay):\n%s", diff)
		}
	})
	t.Run("until inside the compacted history", func(t *testing.T) {
		out := filepath.Join(dir, "early.db")
		err := Replay(ctx, l.st, out, t0.Add(2*24*time.Hour), newViews(t).projs(), Options{})
		if !errors.Is(err, ErrCompacted) || !strings.Contains(err.Error(), "the earliest replayable time is") {
			t.Errorf("err = %v", err)
		}
		if _, serr := os.Stat(out); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("failed replay left its output: %v", serr)
		}
	})
	t.Run("a new projection after compaction starts from the snapshot", func(t *testing.T) {
		l.cancel()
		<-l.done
		c := &counting{name: "late", version: 1}
		v := newViews(t)
		r, _ := New(l.st, append(v.projs(), c), Options{})
		if err := r.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, dump(t, v)); diff != "" {
			t.Errorf("restarted inventory differs (-live +restart):\n%s", diff)
		}
		if n, _, _ := c.stats(); uint64(n) != l.st.Head()-snaps[len(snaps)-1].Seq {
			t.Errorf("new projection applied %d events, want those after the snapshot", n)
		}
		if err := l.st.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReplayWithSnapshotsBeforeCompaction replays a log that was never
// compacted but holds retention.purged events, both ways an uncompacted
// log is replayed: the whole of it (a clone of the file, rebuilt) and up
// to a time (the log copied while it is applied, so snapshots are taken
// before the copy of their event has committed).
func TestReplayWithSnapshotsBeforeCompaction(t *testing.T) {
	dir := t.TempDir()
	l := startLive(t, filepath.Join(dir, "live.db"), retention.Options{Devices: 3 * 24 * time.Hour})
	scenario(l, 8, nil)
	want := dump(t, l.views())
	if l.st.First() > 1 {
		t.Fatalf("the log was compacted (first = %d); this test needs it whole", l.st.First())
	}
	live, err := l.st.Snapshots()
	if err != nil || len(live) == 0 {
		t.Fatalf("no snapshot in the live log (%v): the scenario must purge", err)
	}
	// Rows no projection of the replay owns: a replay drops them.
	err = l.st.DB().Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("retired_projection"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		until time.Time
	}{
		{"whole log", time.Time{}},
		{"until after the last event", t0.Add(365 * 24 * time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "replay.db")
			if err := Replay(context.Background(), l.st, out, c.until, newViews(t).projs(), Options{}); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("output: %v, %v", fi, err)
			}
			if diff := cmp.Diff(want, openDump(t, out)); diff != "" {
				t.Errorf("replay differs from live (-live +replay):\n%s", diff)
			}
			st, err := store.Open(out, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := st.Snapshots()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(live) {
				t.Fatalf("replay took %d snapshots, live %d", len(got), len(live))
			}
			for k := range got {
				if got[k].Seq != live[k].Seq || got[k].Hash != live[k].Hash {
					t.Errorf("snapshot %d: replay %d/%s, live %d/%s", k, got[k].Seq, got[k].Hash, live[k].Seq, live[k].Hash)
				}
			}
			if _, err := st.Verify(context.Background(), nil); err != nil {
				t.Errorf("verify the replayed log: %v", err)
			}
			st.DB().View(func(tx *bolt.Tx) error {
				if tx.Bucket([]byte("retired_projection")) != nil {
					t.Error("the replay kept rows of the source that no projection rebuilt")
				}
				return nil
			})
		})
	}
	l.stop()
}
