package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// The devices of the merge scenarios: a phone seen under two MACs (the
// second randomised), a NAS with two NICs, a printer.
const (
	macPhoneA = "3c:22:fb:00:00:01"
	macPhoneB = "02:aa:bb:00:00:02"
	macNAS1   = "00:11:22:00:00:11"
	macNAS2   = "00:11:22:00:00:12"
	macPrint  = "00:11:22:00:00:99"
)

var (
	idPhoneA = deviceID(macKey(macPhoneA), 0)
	idPhoneB = deviceID(macKey(macPhoneB), 0)
	idNAS1   = deviceID(macKey(macNAS1), 0)
	idNAS2   = deviceID(macKey(macNAS2), 0)
	idPrint  = deviceID(macKey(macPrint), 0)
)

// mstep is one step of a merge scenario. merge steps are left out of
// the baseline run (their seqs skipped, so every other event keeps its
// seq and id).
type mstep struct {
	merge bool
	do    func(h *harness)
}

func doStep(f func(h *harness)) mstep { return mstep{do: f} }

func mergeStep(kind, device, into string, at time.Time) mstep {
	return mstep{merge: true, do: func(h *harness) {
		var p any = events.DeviceMerged{Device: device, Into: into}
		if kind == events.KindDeviceUnmerged {
			p = events.DeviceUnmerged{Device: device, Into: into}
		}
		h.applyEv(h.envelope(kind, p, at, "api", "token:alice", into))
	}}
}

func merge(device, into string, at time.Time) mstep {
	return mergeStep(events.KindDeviceMerged, device, into, at)
}

func unmerge(device, into string, at time.Time) mstep {
	return mergeStep(events.KindDeviceUnmerged, device, into, at)
}

// run applies steps to a new harness; withMerges false skips the merge
// steps' seqs instead of applying them.
func runSteps(t *testing.T, steps []mstep, withMerges bool) *harness {
	t.Helper()
	h := newHarness(t, Options{})
	for _, s := range steps {
		if s.merge && !withMerges {
			h.seq++
			continue
		}
		s.do(h)
	}
	return h
}

// world is the common start: every device seen at t0.
func world() []mstep {
	return []mstep{
		doStep(func(h *harness) {
			h.sweep(sweepAt(t0,
				host("10.0.0.21", macPhoneA, "mdns=phone-a"),
				host("10.0.0.22", macPhoneB, "dhcp=phone"),
				host("10.0.0.31", macNAS1, "dns=nas.lab"),
				host("10.0.0.32", macNAS2, "mdns=nas-eth2"),
				host("10.0.0.50", macPrint, "dns=printer.lab"),
			))
		}),
	}
}

// view returns what every query of the inventory answers, with the
// entries of merges and unmerges left out, for comparing a run with
// merges and unmerges to one without.
func viewNoMerges(t *testing.T, inv *Inventory) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	add := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&b, "== %s\n%s\n", name, js(v))
	}
	drop := func(es []projections.ChangeEntry) []projections.ChangeEntry {
		return slices.DeleteFunc(slices.Clone(es), func(e projections.ChangeEntry) bool {
			return e.Kind == ChangeMerged || e.Kind == ChangeUnmerged
		})
	}
	for _, s := range []string{"name", "-last_seen", "ip"} {
		p, err := inv.ListDevices(ctx, projections.DeviceFilter{Sort: s, Limit: MaxLimit})
		add("devices "+s, p, err)
		raw, next, err := inv.AppendDevicesJSON(ctx, nil, projections.DeviceFilter{Sort: s, Limit: MaxLimit})
		add("devices json "+s, []any{string(raw), next}, err)
	}
	p, err := inv.ListDevices(ctx, projections.DeviceFilter{Limit: MaxLimit})
	add("list", p, err)
	for _, d := range p.Items {
		one, err := inv.Device(ctx, d.ID)
		add("device "+d.ID, one, err)
		raw, err := inv.DeviceJSON(ctx, d.ID)
		add("device json "+d.ID, string(raw), err)
		ws, err := inv.WatchState(d.ID)
		add("watch "+d.ID, ws, err)
		ev, err := inv.ListEvents(ctx, projections.EventFilter{Device: d.ID, Limit: MaxLimit})
		add("events of "+d.ID, drop(ev.Items), err)
	}
	ev, err := inv.ListEvents(ctx, projections.EventFilter{Limit: MaxLimit})
	add("events", drop(ev.Items), err)
	feed, _, err := inv.ChangesAfter(ctx, 0, 10000)
	add("feed", drop(feed), err)
	st, err := inv.Stats(ctx)
	add("stats", st, err)
	gr, err := inv.Groups(ctx)
	add("groups", gr, err)
	dl, ok := inv.NextPresenceDeadline()
	add("deadline", []any{dl, ok}, nil)
	return b.String()
}

// TestUnmergeExact: after merges and their unmerges, every query answers
// what a log without them gives (their own entries aside), reloaded
// or not.
func TestUnmergeExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []mstep
	}{
		{"merge then unmerge", append(world(),
			merge(idPhoneB, idPhoneA, t0.Add(time.Minute)),
			unmerge(idPhoneB, idPhoneA, t0.Add(2*time.Minute)),
		)},
		{"sightings and edits while merged", append(world(),
			merge(idPhoneB, idPhoneA, t0.Add(time.Minute)),
			doStep(func(h *harness) {
				h.sweep(sweepAt(t0.Add(5*time.Minute), host("10.0.0.23", macPhoneB, "dhcp=phone"), host("10.0.0.50", macPrint)))
			}),
			doStep(func(h *harness) {
				h.edit(idPhoneA, "token:bob", events.DeviceEdited{Label: ptr("Alice's phone")}, t0.Add(6*time.Minute))
			}),
			doStep(func(h *harness) { h.watch(idPhoneA, "token:bob", true, t0.Add(7*time.Minute)) }),
			doStep(func(h *harness) { h.tick(t0.Add(25 * time.Minute)) }),
			doStep(func(h *harness) {
				h.sweep(sweepAt(t0.Add(30*time.Minute), host("10.0.0.50", macPrint)))
			}),
			unmerge(idPhoneB, idPhoneA, t0.Add(40*time.Minute)),
			doStep(func(h *harness) {
				h.sweep(sweepAt(t0.Add(45*time.Minute), host("10.0.0.21", macPhoneA)))
			}),
		)},
		{"chain and partial unmerge", append(world(),
			merge(idNAS2, idNAS1, t0.Add(time.Minute)),
			merge(idPrint, idNAS2, t0.Add(2*time.Minute)), // into an alias: refused, a no-op
			merge(idNAS1, idPrint, t0.Add(3*time.Minute)), // moves NAS2 along
			unmerge(idNAS2, idPrint, t0.Add(4*time.Minute)),
			unmerge(idNAS1, idPrint, t0.Add(5*time.Minute)),
		)},
		{"refusals change nothing", append(world(),
			merge(idPhoneA, idPhoneA, t0.Add(time.Minute)),
			merge("dnosuchdevice", idPhoneA, t0.Add(time.Minute)),
			merge(idPhoneA, "dnosuchdevice", t0.Add(time.Minute)),
			unmerge(idPhoneB, idPhoneA, t0.Add(time.Minute)), // not merged
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := viewNoMerges(t, runSteps(t, tc.steps, false).inv)
			h := runSteps(t, tc.steps, true)
			if d := cmp.Diff(want, viewNoMerges(t, h.inv)); d != "" {
				t.Fatalf("after merges and unmerges (-without +with):\n%s", d)
			}
			if d := cmp.Diff(want, viewNoMerges(t, h.load())); d != "" {
				t.Fatalf("reloaded (-without +with):\n%s", d)
			}
		})
	}
}

// TestMergeView checks what a merged pair looks like and that sightings
// of either land on the target.
func TestMergeView(t *testing.T) {
	ctx := context.Background()
	steps := append(world(), merge(idPhoneB, idPhoneA, t0.Add(time.Minute)))
	h := runSteps(t, steps, true)

	if got := h.devices(4); slices.ContainsFunc(got, func(d projections.Device) bool { return d.ID == idPhoneB }) {
		t.Fatalf("the merged device is still listed: %s", js(got))
	}
	for _, read := range []struct {
		name string
		err  func() error
	}{
		{"Device", func() error { _, err := h.inv.Device(ctx, idPhoneB); return err }},
		{"DeviceJSON", func() error { _, err := h.inv.DeviceJSON(ctx, idPhoneB); return err }},
		{"WatchState", func() error { _, err := h.inv.WatchState(idPhoneB); return err }},
	} {
		err := read.err()
		var me *MergedError
		if !errors.As(err, &me) || me.Into != idPhoneA || me.ID != idPhoneB || !errors.Is(err, projections.ErrNotFound) {
			t.Errorf("%s of the merged device: %v, want a MergedError into %s that is ErrNotFound", read.name, err, idPhoneA)
		}
	}

	d, err := h.inv.Device(ctx, idPhoneA)
	if err != nil {
		t.Fatal(err)
	}
	ips := func(d projections.Device) []string {
		var out []string
		for _, a := range d.Addresses {
			out = append(out, a.IP)
		}
		slices.Sort(out)
		return out
	}
	if got := ips(d); !slices.Equal(got, []string{"10.0.0.21", "10.0.0.22"}) {
		t.Errorf("addresses %v", got)
	}
	if d.Names["mdns"].Name != "phone-a" || d.Names["dhcp"].Name != "phone" || d.Name != "phone" {
		t.Errorf("names %v, name %q (dhcp outranks mdns)", d.Names, d.Name)
	}
	if d.MAC == nil || *d.MAC != macPhoneA {
		t.Errorf("mac %v, want the target's", d.MAC)
	}
	st, err := h.inv.Stats(ctx)
	if err != nil || st.Devices != 4 {
		t.Fatalf("stats %+v %v: want 4 devices", st, err)
	}

	// A later sighting of the merged device alone moves the target.
	later := t0.Add(20 * time.Minute)
	h.sweep(sweepAt(later, host("10.0.0.23", macPhoneB, "dhcp=phone2"), host("10.0.0.50", macPrint)))
	d, _ = h.inv.Device(ctx, idPhoneA)
	if !d.LastSeen.Equal(later) || d.Presence != projections.PresenceOnline || d.Name != "phone2" {
		t.Errorf("after a sighting of the merged device: last_seen %v presence %s name %q", d.LastSeen, d.Presence, d.Name)
	}
	if !d.FirstSeen.Equal(t0) {
		t.Errorf("first_seen %v, want the earliest", d.FirstSeen)
	}
	if got := ips(d); !slices.Contains(got, "10.0.0.23") {
		t.Errorf("the new address is not on the target: %v", got)
	}
	// The merged device's own entries show under the target, in the
	// device's list and in the feed.
	ev, err := h.inv.ListEvents(ctx, projections.EventFilter{Device: idPhoneA, Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var sawAlias, sawMerge bool
	for k, e := range ev.Items {
		if e.DeviceID != idPhoneA {
			t.Errorf("entry %s shows device %s", e.ID, e.DeviceID)
		}
		if k > 0 && e.Seq > ev.Items[k-1].Seq {
			t.Errorf("entries out of order: %s", js(ev.Items))
		}
		sawAlias = sawAlias || strings.Contains(e.Summary, "10.0.0.23") || e.Kind == projections.ChangeNameChanged
		sawMerge = sawMerge || (e.Kind == ChangeMerged && e.Actor == "token:alice" && e.Data != nil && e.Data.New == idPhoneB)
	}
	if !sawAlias || !sawMerge {
		t.Errorf("target's entries lack the merged device's changes (%v) or the merge (%v): %s", sawAlias, sawMerge, js(ev.Items))
	}
	feed, _, err := h.inv.ChangesAfter(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range feed {
		if e.DeviceID == idPhoneB {
			t.Errorf("feed entry %s still names the merged device", e.ID)
		}
	}
	// Pages of the merged walk join up exactly.
	var paged []projections.ChangeEntry
	f := projections.EventFilter{Device: idPhoneA, Limit: 2}
	for {
		p, err := h.inv.ListEvents(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p.Items...)
		if p.NextCursor == nil {
			break
		}
		f.Cursor = *p.NextCursor
	}
	if d := cmp.Diff(ev.Items, paged); d != "" {
		t.Errorf("paged entries differ:\n%s", d)
	}
	// The search finds the target by the merged device's address.
	found, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Q: "10.0.0.23"})
	if err != nil || len(found.Items) != 1 || found.Items[0].ID != idPhoneA {
		t.Errorf("q=10.0.0.23: %s %v", js(found.Items), err)
	}
	// And by the merged device's MAC, which the group does not show.
	for _, q := range []string{macPhoneB, strings.ToUpper(macPhoneB[9:])} {
		found, err = h.inv.ListDevices(ctx, projections.DeviceFilter{Q: q})
		if err != nil || len(found.Items) != 1 || found.Items[0].ID != idPhoneA {
			t.Errorf("q=%s (the merged device's MAC): %s %v", q, js(found.Items), err)
		}
	}
	h.checkReload()
}

// TestMergePresence: the group is online while any member is.
func TestMergePresence(t *testing.T) {
	ctx := context.Background()
	h := runSteps(t, append(world(), merge(idNAS2, idNAS1, t0.Add(time.Minute))), true)
	// NAS1 goes quiet for an hour while NAS2 keeps answering.
	for k := 1; k <= 4; k++ {
		h.sweep(sweepAt(t0.Add(time.Duration(k)*15*time.Minute), host("10.0.0.32", macNAS2)))
	}
	on, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Presence: projections.PresenceOnline})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(on.Items, func(d projections.Device) bool { return d.ID == idNAS1 }) {
		t.Fatalf("the group is not online: %s", js(on.Items))
	}
	d, _ := h.inv.Device(ctx, idNAS1)
	if d.Presence != projections.PresenceOnline || !d.LastSeen.Equal(t0.Add(time.Hour)) {
		t.Errorf("presence %s last_seen %v", d.Presence, d.LastSeen)
	}
	// The phones and the printer went offline with NAS1 itself; the
	// group stays online, so it is online alone.
	st, _ := h.inv.Stats(ctx)
	if st.ByPresence[projections.PresenceOnline] != 1 || st.Devices != 4 {
		t.Errorf("stats %d devices, by presence %v", st.Devices, st.ByPresence)
	}
}

// TestMergeChains: merging a target moves its group along, unmerging
// takes a device out with what was merged into it.
func TestMergeChains(t *testing.T) {
	ctx := context.Background()
	h := runSteps(t, append(world(),
		merge(idNAS2, idNAS1, t0.Add(time.Minute)),
		merge(idNAS1, idPrint, t0.Add(2*time.Minute)),
	), true)
	h.devices(3)
	for _, id := range []string{idNAS1, idNAS2} {
		var me *MergedError
		if _, err := h.inv.Device(ctx, id); !errors.As(err, &me) || me.Into != idPrint {
			t.Errorf("%s: %v, want merged into the printer", id, err)
		}
	}
	d, _ := h.inv.Device(ctx, idPrint)
	if len(d.Addresses) != 3 {
		t.Errorf("group of three has addresses %s", js(d.Addresses))
	}
	// Unmerging NAS2 (not merged into the printer directly) works: it
	// leaves the group, NAS1 stays.
	h.applyEv(h.envelope(events.KindDeviceUnmerged, events.DeviceUnmerged{Device: idNAS2, Into: idPrint}, t0.Add(3*time.Minute), "api", "token:alice", idPrint))
	h.devices(4)
	if _, err := h.inv.Device(ctx, idNAS2); err != nil {
		t.Errorf("NAS2 after unmerge: %v", err)
	}
	// Unmerging NAS1 from the printer brings it back alone.
	h.applyEv(h.envelope(events.KindDeviceUnmerged, events.DeviceUnmerged{Device: idNAS1, Into: idPrint}, t0.Add(4*time.Minute), "api", "token:alice", idPrint))
	h.devices(5)
	h.checkReload()
}

// TestMergeRefusedEvents: events the command would refuse change
// nothing and write no entry.
func TestMergeRefusedEvents(t *testing.T) {
	for _, tc := range []struct {
		name           string
		device, into   string
		unmerge        bool
		premerge       bool // NAS2 merged into NAS1 first
		wantMergeCount int
	}{
		{name: "into itself", device: idPhoneA, into: idPhoneA},
		{name: "unknown device", device: "dnosuchdevice", into: idPhoneA},
		{name: "unknown target", device: idPhoneA, into: "dnosuchdevice"},
		{name: "into an alias", device: idPrint, into: idNAS2, premerge: true, wantMergeCount: 1},
		{name: "an alias elsewhere", device: idNAS2, into: idPrint, premerge: true, wantMergeCount: 1},
		{name: "again", device: idNAS2, into: idNAS1, premerge: true, wantMergeCount: 1},
		{name: "unmerge not merged", device: idPhoneB, into: idPhoneA, unmerge: true},
		{name: "unmerge from another", device: idNAS2, into: idPrint, unmerge: true, premerge: true, wantMergeCount: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := world()
			if tc.premerge {
				steps = append(steps, merge(idNAS2, idNAS1, t0.Add(time.Minute)))
			}
			h := runSteps(t, steps, true)
			before := snapshotAll(t, h.inv)
			kind := events.KindDeviceMerged
			var p any = events.DeviceMerged{Device: tc.device, Into: tc.into}
			if tc.unmerge {
				kind, p = events.KindDeviceUnmerged, events.DeviceUnmerged{Device: tc.device, Into: tc.into}
			}
			h.applyEv(h.envelope(kind, p, t0.Add(2*time.Minute), "api", "token:alice", tc.into))
			if d := cmp.Diff(before, snapshotAll(t, h.inv)); d != "" {
				t.Fatalf("a refused event changed the inventory:\n%s", d)
			}
			n := 0
			for _, e := range h.entries() {
				if e.Kind == ChangeMerged || e.Kind == ChangeUnmerged {
					n++
				}
			}
			if n != tc.wantMergeCount {
				t.Errorf("%d merge entries, want %d", n, tc.wantMergeCount)
			}
		})
	}
}

// TestMergeReplay: replaying the same log into a new inventory gives the
// same answers (the merges are events).
func TestMergeReplay(t *testing.T) {
	steps := append(world(),
		merge(idPhoneB, idPhoneA, t0.Add(time.Minute)),
		doStep(func(h *harness) {
			h.sweep(sweepAt(t0.Add(10*time.Minute), host("10.0.0.24", macPhoneB)))
		}),
		merge(idNAS2, idNAS1, t0.Add(11*time.Minute)),
		unmerge(idPhoneB, idPhoneA, t0.Add(12*time.Minute)),
		merge(idPhoneA, idPhoneB, t0.Add(13*time.Minute)),
	)
	a := runSteps(t, steps, true)
	b := runSteps(t, steps, true)
	if d := cmp.Diff(snapshotAll(t, a.inv), snapshotAll(t, b.inv)); d != "" {
		t.Fatalf("replays differ:\n%s", d)
	}
	if _, err := a.inv.Device(context.Background(), idPhoneA); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("phone A merged into phone B: %v", err)
	}
	a.checkReload()
}

// TestMergePurge: a merged device retention removes leaves the group.
func TestMergePurge(t *testing.T) {
	ctx := context.Background()
	h := runSteps(t, append(world(), merge(idPhoneB, idPhoneA, t0.Add(time.Minute))), true)
	cut := t0.Add(time.Hour)
	h.purge(events.RetentionPurged{DevicesBefore: &cut, Counts: map[string]int{"devices": 1}, DeletedDevices: []string{idPhoneA}}, t0.Add(2*time.Hour))
	if _, err := h.inv.Device(ctx, idPhoneA); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("purged target: %v", err)
	}
	if _, err := h.inv.Device(ctx, idPhoneB); err != nil {
		t.Fatalf("the merged device of a purged target: %v", err)
	}
	if len(h.inv.merges) != 0 {
		t.Errorf("links left: %v", h.inv.merges)
	}
	h.checkReload()
}

// TestMergeJSON: the encoded documents of a merged group are its typed
// view (cached or not), and a merge or unmerge invalidates them.
func TestMergeJSON(t *testing.T) {
	ctx := context.Background()
	h := runSteps(t, world(), true)
	check := func(wantIDs int) {
		t.Helper()
		items, _ := listJSON(t, h.inv, projections.DeviceFilter{Limit: MaxLimit})
		page, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: MaxLimit})
		if err != nil || len(items) != wantIDs || len(page.Items) != wantIDs {
			t.Fatalf("%d documents, %d devices, want %d (%v)", len(items), len(page.Items), wantIDs, err)
		}
		for k, d := range page.Items {
			checkDeviceJSON(t, items[k], d)
			one, err := h.inv.DeviceJSON(ctx, d.ID) // from the cache the list filled
			if err != nil {
				t.Fatal(err)
			}
			checkDeviceJSON(t, one, d)
		}
	}
	check(5)
	h.applyEv(h.envelope(events.KindDeviceMerged, events.DeviceMerged{Device: idNAS2, Into: idNAS1}, t0.Add(time.Minute), "api", "a", idNAS1))
	check(4)
	raw, err := h.inv.DeviceJSON(ctx, idNAS1)
	if err != nil || !strings.Contains(string(raw), "10.0.0.32") || !strings.Contains(string(raw), "nas-eth2") {
		t.Fatalf("the cached document of the target lacks the merged NIC: %s %v", raw, err)
	}
	h.applyEv(h.envelope(events.KindDeviceUnmerged, events.DeviceUnmerged{Device: idNAS2, Into: idNAS1}, t0.Add(2*time.Minute), "api", "a", idNAS1))
	check(5)
	raw, _ = h.inv.DeviceJSON(ctx, idNAS1)
	if strings.Contains(string(raw), "10.0.0.32") {
		t.Fatalf("the target's document still shows the unmerged NIC: %s", raw)
	}
}

func TestKeptByMerge(t *testing.T) {
	h := runSteps(t, append(world(), merge(idPhoneB, idPhoneA, t0.Add(time.Minute))), true)
	later := t0.Add(48 * time.Hour)
	h.sweep(sweepAt(later, host("10.0.0.22", macPhoneB)))
	for _, tc := range []struct {
		name   string
		id     string
		cutoff time.Time
		want   bool
	}{
		{"stale root of a recent member", idPhoneA, t0.Add(time.Hour), true},
		{"recent member", idPhoneB, t0.Add(time.Hour), true},
		{"whole group stale", idPhoneA, later.Add(time.Hour), false},
		{"not merged", idPrint, t0.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.inv.keptByMerge(h.inv.devs[tc.id], tc.cutoff); got != tc.want {
				t.Errorf("keptByMerge = %v, want %v", got, tc.want)
			}
		})
	}
	// Retention keeps the group whole: the stale root stays while its
	// merged member is recent, in the plan and when the purge is applied
	// (a purge decided elsewhere may still name it).
	cut := t0.Add(time.Hour)
	_, del, err := h.inv.PurgePlan(context.Background(), Cutoffs{Devices: &cut})
	if err != nil || slices.Contains(del, idPhoneA) || slices.Contains(del, idPhoneB) {
		t.Fatalf("plan deletes %v (%v): the phone's group must stay", del, err)
	}
	h.purge(events.RetentionPurged{DevicesBefore: &cut, DeletedDevices: []string{idPhoneA, idPhoneB}}, later.Add(time.Minute))
	if h.inv.devs[idPhoneA] == nil || h.inv.devs[idPhoneB] == nil || h.inv.rootOf(idPhoneB) != idPhoneA {
		t.Fatal("the purge split or removed the phone's group")
	}
	h.edit(idPhoneA, "a", events.DeviceEdited{Label: ptr("phone")}, later.Add(time.Minute))
	if !h.inv.keptByMerge(h.inv.devs[idPhoneB], later.Add(time.Hour)) {
		t.Error("a stale group with a labelled root is not kept")
	}
}

// TestMergedPresenceEntries: a member's presence entries stay its own
// (the change log keeps them), but those that do not change what the
// group shows are marked GroupSteady in the feed, so that no
// notification says the group went offline while it is online.
func TestMergedPresenceEntries(t *testing.T) {
	ctx := context.Background()
	h := runSteps(t, append(world(), merge(idNAS2, idNAS1, t0.Add(time.Minute))), true)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	// NAS1 goes offline while NAS2 answers: the group stays online.
	for m := 15; m <= 45; m += 15 {
		h.sweep(sweepAt(at(m), host("10.0.0.32", macNAS2), host("10.0.0.50", macPrint)))
	}
	// Then NAS2 too, the last one online: the group goes offline.
	for m := 60; m <= 90; m += 15 {
		h.sweep(sweepAt(at(m), host("10.0.0.50", macPrint)))
	}
	// NAS1 comes back (the group with it), then NAS2 joins it.
	h.sweep(sweepAt(at(95), host("10.0.0.31", macNAS1), host("10.0.0.50", macPrint)))
	h.sweep(sweepAt(at(100), host("10.0.0.31", macNAS1), host("10.0.0.32", macNAS2), host("10.0.0.50", macPrint)))

	feed, _, err := h.inv.ChangesAfter(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range feed {
		switch e.Kind {
		case projections.ChangeOnline, projections.ChangeOffline, projections.ChangeQuiet:
		default:
			continue
		}
		if e.DeviceID == idNAS1 {
			got = append(got, fmt.Sprintf("%s %s steady=%v", e.Kind, strings.Fields(e.Summary)[0], e.GroupSteady))
		} else if e.GroupSteady {
			t.Errorf("%s of an unmerged device marked steady: %s", e.Kind, e.Summary)
		}
	}
	want := []string{
		"device.offline nas.lab steady=true",
		"device.offline nas-eth2 steady=false",
		"device.online nas.lab steady=false",
		"device.online nas-eth2 steady=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the group's presence entries:\n got %q\nwant %q", got, want)
	}
	// The change log lists them all, as it would without the merge.
	ev, err := h.inv.ListEvents(ctx, projections.EventFilter{Device: idNAS1, Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ev.Items {
		if e.Kind == projections.ChangeOnline || e.Kind == projections.ChangeOffline {
			n++
		}
	}
	if n != 4 {
		t.Errorf("the change log of the group lists %d presence entries, want 4", n)
	}
	// A reload reads the marks from the database.
	if feed2, _, err := h.load().ChangesAfter(ctx, 0, 10000); err != nil || len(feed2) != len(feed) {
		t.Fatalf("after a reload: %d entries, %v", len(feed2), err)
	} else {
		for k := range feed {
			if feed2[k].GroupSteady != feed[k].GroupSteady {
				t.Errorf("entry %d (%s): steady %v after a reload, %v before", k, feed[k].Summary, feed2[k].GroupSteady, feed[k].GroupSteady)
			}
		}
	}
}
