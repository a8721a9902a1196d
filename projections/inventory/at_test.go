package inventory_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

// asHistory converts the API form of a device (as a replay has it) into
// the history fields, independently of the projection's own code.
func asHistory(v projections.Device) history.Device {
	d := history.Device{
		ID: v.ID, Name: v.Name, Names: map[string]history.Name{}, MAC: v.MAC, MACRandom: v.MACRandom, Vendor: v.Vendor,
		Addresses: []history.Address{}, Ports: []history.Port{}, Label: v.Label, Group: v.Group, Type: v.Type, Notes: v.Notes,
		Ignored: v.Ignored, Watched: v.Watched, Presence: v.Presence, FirstSeen: v.FirstSeen.UTC(), Sources: append([]string{}, v.Sources...),
	}
	for src, n := range v.Names {
		d.Names[src] = history.Name{Name: n.Name}
	}
	for _, a := range v.Addresses {
		d.Addresses = append(d.Addresses, history.Address{IP: a.IP, Network: a.Network, FirstSeen: a.FirstSeen.UTC(), RetiredAt: a.RetiredAt})
	}
	slices.SortFunc(d.Addresses, func(a, b history.Address) int { return cmp.Compare(a.IP, b.IP) })
	for _, p := range v.Ports {
		// The service as a port's number names it: advertised services
		// are not history.
		d.Ports = append(d.Ports, history.Port{Port: p.Port, Proto: p.Proto, Service: inventory.ServiceOf(p.Port)})
	}
	if a := v.AttachedTo; a != nil {
		d.AttachedTo = &history.Attachment{DeviceID: a.DeviceID, Source: a.Source, Peer: a.Peer, Port: a.Port, SSID: a.SSID, Band: a.Band}
	}
	return d
}

// replayAt rebuilds the inventory from the log up to t (runner.Replay)
// and returns its devices, converted, by id; and its stats.
func replayAt(t *testing.T, st *store.Store, at time.Time) (map[string]history.Device, projections.Stats, map[string]string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "at.db")
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Replay(ctx, st, path, at, []runner.Projection{inv}, runner.Options{}); err != nil {
		t.Fatalf("replay until %s: %v", at, err)
	}
	dst, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	inv2, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(dst, []runner.Projection{inv2}, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string]history.Device{}
	f := projections.DeviceFilter{Sort: "name", Limit: 500}
	for {
		p, err := inv2.ListDevices(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Items {
			out[d.ID] = asHistory(d)
		}
		if p.NextCursor == nil {
			break
		}
		f.Cursor = *p.NextCursor
	}
	stats, err := inv2.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The devices merged into another then, and the root each is shown
	// as part of.
	aliases := map[string]string{}
	err = dst.Scan(ctx, 1, func(e events.Envelope) error {
		if e.Kind != events.KindDeviceMerged {
			return nil
		}
		var p events.DeviceMerged
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return err
		}
		var me *inventory.MergedError
		if _, err := inv2.Device(ctx, p.Device); errors.As(err, &me) {
			aliases[p.Device] = me.Into
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, stats, aliases
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The view at an instant (DevicesAt, DeviceAt, StatsAt, Diff) equals,
// field by field, the inventory a replay of the log up to that instant
// builds: for many instants of a generated log with churn, renames,
// port scans, edits, watches, a device purge and history compaction
// (instants before the cut answer CompactedError naming the earliest that
// works).
func TestAtEqualsReplay(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "live.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	days, keep := 4, 60*time.Hour
	if testing.Short() {
		days, keep = 3, 40*time.Hour
	}
	end := genHistory(t, st, inv, t0, histLog{devices: 60, days: days, keep: keep, deleteAt: t0.Add(30 * time.Hour), merges: true})
	from := end.Add(-keep).Add(-time.Hour) // the last hourly cut is within the last hour
	earliest := func() time.Time {
		_, err := inv.DevicesAt(ctx, t0)
		var ce *history.CompactedError
		if !errors.As(err, &ce) || !errors.Is(err, history.ErrCompacted) {
			t.Fatalf("DevicesAt(%s) before the cut: %v, want a CompactedError", t0, err)
		}
		return ce.Earliest
	}()
	if earliest.Before(from) || earliest.After(end) {
		t.Fatalf("earliest %s, want about %s", earliest, end.Add(-keep))
	}
	// HistoryFrom (log stats) names the same instant, as does the row
	// read without a loaded inventory.
	if hf, err := inv.HistoryFrom(ctx); err != nil || !hf.Equal(earliest) {
		t.Errorf("HistoryFrom %s, %v; the refusal names %s", hf, err, earliest)
	}
	_ = st.DB().View(func(tx *bolt.Tx) error {
		if sf, ok := inventory.StoredHistoryFrom(tx); !ok || !sf.Equal(earliest) {
			t.Errorf("StoredHistoryFrom %s, %v; the refusal names %s", sf, ok, earliest)
		}
		return nil
	})
	if _, err := inv.DeviceAt(ctx, "dwhatever", earliest.Add(-time.Second)); !errors.Is(err, history.ErrCompacted) {
		t.Fatalf("DeviceAt before the cut: %v", err)
	}

	// Compaction left, before the cut, at most one row per device (never
	// an empty one), and no row unvisited.
	err = st.DB().View(func(tx *bolt.Tx) error {
		before := map[string]int{}
		cutKey := timeKeyOf(earliest)
		err := tx.Bucket([]byte("inventory.history")).ForEach(func(k, v []byte) error {
			n := len(k) - 1 - 12 - 8
			if bytes.Compare(k[n+1:n+13], cutKey) < 0 {
				before[string(k[:n])]++
				if len(v) == 0 {
					t.Errorf("a tombstone of %s before the cut", k[:n])
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for id, n := range before {
			if n > 1 {
				t.Errorf("%s keeps %d rows before the cut", id, n)
			}
		}
		if len(before) == 0 {
			t.Error("no row before the cut: nothing shows the devices as they were at it")
		}
		k, _ := tx.Bucket([]byte("inventory.history_by_time")).Cursor().First()
		if k != nil && bytes.Compare(k[:12], cutKey) < 0 {
			t.Errorf("time index key %x before the cut", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	instants := []time.Time{earliest, end, end.Add(time.Hour), earliest.Add(5*time.Minute - 20*time.Second)}
	span := end.Sub(earliest)
	for range 14 {
		instants = append(instants, earliest.Add(time.Duration(rng.Int64N(int64(span)))))
	}
	// Exactly at a sweep's end, and a nanosecond before it.
	sweepAt := earliest.Truncate(5 * time.Minute).Add(15 * time.Minute)
	instants = append(instants, sweepAt, sweepAt.Add(-time.Nanosecond))

	// And at instants while devices were merged: a merge every 7 hours,
	// separated 3 hours later.
	var mergedAt []time.Time
	_ = st.Scan(ctx, 1, func(e events.Envelope) error {
		if e.Kind == events.KindDeviceMerged && !e.Time.Before(earliest) {
			mergedAt = append(mergedAt, e.Time.Add(time.Minute))
			instants = append(instants, e.Time.Add(time.Minute), e.Time.Add(-time.Nanosecond))
		}
		return nil
	})
	if len(mergedAt) == 0 {
		t.Fatal("no merge within the kept history")
	}
	aliases := 0

	views := map[time.Time]map[string]history.Device{}
	for _, at := range instants {
		want, wantStats, wantAliases := replayAt(t, st, at)
		views[at] = want
		got, err := inv.DevicesAt(ctx, at)
		if err != nil {
			t.Fatalf("DevicesAt(%s): %v", at, err)
		}
		if len(got) != len(want) {
			t.Errorf("at %s: %d devices, the replay has %d", at, len(got), len(want))
		}
		for _, d := range got {
			w, ok := want[d.ID]
			if !ok {
				t.Errorf("at %s: %s (%s) is not in the replay", at, d.ID, d.Name)
				continue
			}
			if g, w := jsonOf(d), jsonOf(w); g != w {
				t.Errorf("at %s: device %s\n got %s\nwant %s", at, d.ID, g, w)
			}
			one, err := inv.DeviceAt(ctx, d.ID, at)
			if err != nil || jsonOf(one) != jsonOf(d) {
				t.Errorf("at %s: DeviceAt(%s) = %v, %v", at, d.ID, jsonOf(one), err)
			}
		}
		for id, into := range wantAliases {
			aliases++
			_, err := inv.DeviceAt(ctx, id, at)
			var me *inventory.MergedError
			if !errors.As(err, &me) || me.Into != into {
				t.Errorf("at %s: DeviceAt of %s, merged into %s: %v", at, id, into, err)
			}
		}
		if !slices.IsSortedFunc(got, func(a, b history.Device) int {
			return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.ID, b.ID))
		}) {
			t.Errorf("at %s: not sorted by name", at)
		}
		gs, err := inv.StatsAt(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		ws := wantStats
		if gs.Devices != ws.Devices || gs.Watched != ws.Watched || gs.Ignored != ws.Ignored ||
			jsonOf(gs.ByPresence) != jsonOf(ws.ByPresence) || jsonOf(gs.ByGroup) != jsonOf(ws.ByGroup) ||
			jsonOf(gs.ByNetwork) != jsonOf(ws.ByNetwork) || jsonOf(gs.BySource) != jsonOf(ws.BySource) ||
			(ws.NewestDevice == nil) != (gs.NewestDevice == nil) || (ws.NewestDevice != nil && ws.NewestDevice.ID != gs.NewestDevice.ID) {
			t.Errorf("at %s: stats\n got %s\nwant %s", at, jsonOf(gs), jsonOf(ws))
		}
	}
	if t.Failed() {
		return
	}

	// The generated log must exercise what the test claims to check.
	var presence, ports, edits, gone, names int
	for k := 1; k < len(instants); k++ {
		a, b := views[instants[k-1]], views[instants[k]]
		for id, d := range a {
			e, ok := b[id]
			if !ok {
				gone++
				continue
			}
			if d.Presence != e.Presence {
				presence++
			}
			if jsonOf(d.Ports) != jsonOf(e.Ports) {
				ports++
			}
			if jsonOf([]any{d.Label, d.Group, d.Notes, d.Ignored, d.Watched}) != jsonOf([]any{e.Label, e.Group, e.Notes, e.Ignored, e.Watched}) {
				edits++
			}
			if d.Name != e.Name {
				names++
			}
		}
	}
	if aliases == 0 {
		t.Error("no instant with a merged device")
	}
	if presence == 0 || ports == 0 || edits == 0 || gone == 0 || names == 0 {
		t.Errorf("the log changes too little: presence %d, ports %d, edits %d, gone %d, names %d", presence, ports, edits, gone, names)
	}

	// Diff of pairs of instants against the two replays.
	for k := 1; k < len(instants); k += 3 {
		t1, t2 := instants[k-1], instants[k]
		d, err := inv.Diff(ctx, t1, t2)
		if err != nil {
			t.Fatal(err)
		}
		a, b := views[t1], views[t2]
		var added, removed, changed []string
		for id := range b {
			if _, ok := a[id]; !ok {
				added = append(added, id)
			}
		}
		for id, x := range a {
			y, ok := b[id]
			if !ok {
				removed = append(removed, id)
				continue
			}
			if fields := diffOf(x, y); fields != "" {
				changed = append(changed, id+" "+fields)
			}
		}
		var gotAdded, gotRemoved, gotChanged []string
		for _, x := range d.Added {
			gotAdded = append(gotAdded, x.ID)
		}
		for _, x := range d.Removed {
			gotRemoved = append(gotRemoved, x.ID)
		}
		for _, c := range d.Changed {
			keys := slices.Sorted(func(yield func(string) bool) {
				for f := range c.Fields {
					if !yield(f) {
						return
					}
				}
			})
			for _, f := range keys {
				fc := c.Fields[f]
				if jsonOf(fc.From) != fieldJSON(a[c.ID], f) || jsonOf(fc.To) != fieldJSON(b[c.ID], f) {
					t.Errorf("diff %s..%s: %s.%s = %s -> %s", t1, t2, c.ID, f, jsonOf(fc.From), jsonOf(fc.To))
				}
			}
			gotChanged = append(gotChanged, c.ID+" "+strings.Join(keys, ","))
		}
		for _, l := range [][]string{added, removed, changed, gotAdded, gotRemoved, gotChanged} {
			slices.Sort(l)
		}
		if jsonOf(added) != jsonOf(gotAdded) || jsonOf(removed) != jsonOf(gotRemoved) || jsonOf(changed) != jsonOf(gotChanged) {
			t.Errorf("diff %s..%s:\n got +%v -%v ~%v\nwant +%v -%v ~%v", t1, t2, gotAdded, gotRemoved, gotChanged, added, removed, changed)
		}
	}
}

// fieldJSON is one of history.DiffFields of d, encoded.
func fieldJSON(d history.Device, f string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(jsonOf(d)), &m); err != nil {
		panic(err)
	}
	return string(m[f])
}

// diffOf lists the history.DiffFields that differ, sorted, comma-separated.
func diffOf(a, b history.Device) string {
	var out []string
	for _, f := range history.DiffFields {
		if fieldJSON(a, f) != fieldJSON(b, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// Before any event, and at an instant with nothing yet, the view is empty
// (the log is whole: every instant works).
func TestAtEmptyAndUnknown(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "live.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	end := genHistory(t, st, inv, t0, histLog{devices: 20, days: 1})
	for _, tc := range []struct {
		at   time.Time
		want int
	}{
		{t0.Add(-24 * time.Hour), 0},
		{t0.Add(-time.Nanosecond), 0},
		{t0, 19}, // the laptop comes at 09:00
		{end, 20},
	} {
		ds, err := inv.DevicesAt(ctx, tc.at)
		if err != nil || len(ds) != tc.want {
			t.Errorf("at %s: %d devices, %v; want %d", tc.at, len(ds), err, tc.want)
		}
	}
	ds, _ := inv.DevicesAt(ctx, end)
	if _, err := inv.DeviceAt(ctx, ds[0].ID, t0.Add(-time.Second)); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("a device before it existed: %v, want ErrNotFound", err)
	}
	if _, err := inv.DeviceAt(ctx, "dnosuchdevice", end); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("an unknown device: %v, want ErrNotFound", err)
	}
	d, err := inv.Diff(ctx, t0.Add(-time.Hour), end)
	if err != nil || len(d.Added) != 20 || len(d.Removed) != 0 || len(d.Changed) != 0 {
		t.Errorf("diff from nothing: %d added, %d removed, %d changed, %v", len(d.Added), len(d.Removed), len(d.Changed), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := inv.DevicesAt(cctx, end); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func isNotFound(err error) bool { return errors.Is(err, projections.ErrNotFound) }

// timeKeyOf encodes t as the projection's time keys do (seconds with the
// sign bit flipped, nanoseconds).
func timeKeyOf(t time.Time) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(k, uint32(t.Nanosecond()))
}

// The log's times may step back (sources append as they finish): the
// view at T is still what a replay up to T (which stops at the first
// event after T, whatever its kind) builds.
func TestAtClockStepsBack(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "live.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.New(st, []runner.Projection{inv}, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	sweep := func(at time.Time, ips ...string) events.Envelope {
		s := events.SweepCompleted{ScanID: at.Format("150405"), Started: at.Add(-10 * time.Second), Finished: at,
			Networks: []string{"10.0.0.0/24"}, ProbesSent: 254, Complete: true}
		for _, ip := range ips {
			s.Hosts = append(s.Hosts, events.SweepHost{IP: ip, MAC: "02:00:00:00:00:" + ip[len(ip)-2:], Via: "icmp"})
		}
		e := events.MustNew(events.KindSweepCompleted, s, at)
		e.Source = "sweep:lab"
		return e
	}
	rules := events.MustNew(events.KindNotifyRulesSet, events.NotifyRulesSet{Destination: "alerts"}, t0.Add(time.Hour))
	rules.Source, rules.Actor = "cli", "cli:test"
	for _, e := range []events.Envelope{
		sweep(t0, "10.0.0.11"),
		sweep(t0.Add(-time.Minute), "10.0.0.11", "10.0.0.12"), // steps back
		rules, // an hour on, a kind the inventory does not read
		sweep(t0.Add(30*time.Minute), "10.0.0.11", "10.0.0.12", "10.0.0.13"), // back before it
		sweep(t0.Add(2*time.Hour), "10.0.0.14"),
	} {
		if _, err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Time
		want int
	}{
		{t0.Add(-90 * time.Second), 0},
		{t0.Add(-30 * time.Second), 0}, // the second sweep comes after the first, at 10:00
		{t0, 2},
		{t0.Add(45 * time.Minute), 2}, // the third sweep counts from 11:00
		{t0.Add(time.Hour), 3},
		{t0.Add(2 * time.Hour), 4},
	} {
		want, _, _ := replayAt(t, st, tc.at)
		got, err := inv.DevicesAt(ctx, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want || len(want) != tc.want {
			t.Errorf("at %s: %d devices, the replay %d, want %d", tc.at.Format(time.TimeOnly), len(got), len(want), tc.want)
		}
		for _, d := range got {
			if jsonOf(d) != jsonOf(want[d.ID]) {
				t.Errorf("at %s: %s\n got %s\nwant %s", tc.at, d.ID, jsonOf(d), jsonOf(want[d.ID]))
			}
		}
	}
}
