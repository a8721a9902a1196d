package inventory

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// fleet builds n devices: device k is at 10.<k/62500>.<k/250%250>.<k%250+1>
// in that /24, has MAC 00:11:22:... (vendor Acme) for even k and
// 3c:22:fb:... (Apple) for odd k, a dns name "host-<k>.lab" for
// k%3 != 0, group "g<k%4>" for k%5 == 0, is watched for k%7 == 0 and
// ignored for k%11 == 0. Sweeps of 500 hosts finish a second apart.
func fleet(t testing.TB, n int) *harness {
	h := newHarness(t, Options{})
	var hosts []events.SweepHost
	byIP := map[string]int{}
	for k := range n {
		mac := fmt.Sprintf("00:11:22:%02x:%02x:%02x", k>>16&0xff, k>>8&0xff, k&0xff)
		if k%2 == 1 {
			mac = fmt.Sprintf("3c:22:fb:%02x:%02x:%02x", k>>16&0xff, k>>8&0xff, k&0xff)
		}
		ip := fmt.Sprintf("10.%d.%d.%d", k/62500, k/250%250, k%250+1)
		byIP[ip] = k
		var names []string
		if k%3 != 0 {
			names = append(names, fmt.Sprintf("dns=host-%d.lab", k))
		}
		hs := host(ip, mac, names...)
		hs.Network = netip.MustParsePrefix(ip + "/24").Masked().String()
		hosts = append(hosts, hs)
	}
	for i := 0; i < len(hosts); i += 500 {
		s := sweepAt(t0.Add(time.Duration(i/500)*time.Second), hosts[i:min(i+500, len(hosts))]...)
		s.Networks = nil
		h.sweep(s)
	}
	for _, d := range h.devicesAll() {
		k := byIP[d.Addresses[0].IP]
		e := events.DeviceEdited{}
		if k%5 == 0 {
			e.Group = ptr(fmt.Sprintf("g%d", k%4))
		}
		if k%11 == 0 {
			e.Ignored = ptr(true)
		}
		if e.Group != nil || e.Ignored != nil {
			h.edit(d.ID, "alice", e, t0.Add(time.Hour))
		}
		if k%7 == 0 {
			h.watch(d.ID, "alice", true, t0.Add(time.Hour))
		}
	}
	return h
}

func (h *harness) devicesAll() []projections.Device {
	var all []projections.Device
	f := projections.DeviceFilter{Limit: MaxLimit}
	for {
		p, err := h.inv.ListDevices(context.Background(), f)
		if err != nil {
			h.t.Fatal(err)
		}
		all = append(all, p.Items...)
		if p.NextCursor == nil {
			return all
		}
		f.Cursor = *p.NextCursor
	}
}

// pages lists every page of f at page size limit and returns the ids.
func pages(t *testing.T, inv *Inventory, f projections.DeviceFilter) []string {
	t.Helper()
	var ids []string
	for n := 0; ; n++ {
		p, err := inv.ListDevices(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > max(f.Limit, 0) && f.Limit > 0 {
			t.Fatalf("page of %d > limit %d", len(p.Items), f.Limit)
		}
		for _, d := range p.Items {
			ids = append(ids, d.ID)
		}
		if p.NextCursor == nil {
			return ids
		}
		if n > 10000 {
			t.Fatal("pagination does not end")
		}
		f.Cursor = *p.NextCursor
	}
}

func TestListDevicesSortAndPaging(t *testing.T) {
	h := fleet(t, 60)
	all := h.devicesAll()
	if len(all) != 60 {
		t.Fatalf("%d devices", len(all))
	}
	less := map[string]func(a, b projections.Device) int{
		"name": func(a, b projections.Device) int {
			return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		},
		"ip": func(a, b projections.Device) int {
			return netip.MustParseAddr(a.Addresses[0].IP).Compare(netip.MustParseAddr(b.Addresses[0].IP))
		},
		"first_seen": func(a, b projections.Device) int { return a.FirstSeen.Compare(b.FirstSeen) },
		"last_seen":  func(a, b projections.Device) int { return a.LastSeen.Compare(b.LastSeen) },
	}
	for field, cmpf := range less {
		for _, desc := range []bool{false, true} {
			sortSpec := field
			if desc {
				sortSpec = "-" + field
			}
			want := slices.Clone(all)
			slices.SortFunc(want, func(a, b projections.Device) int {
				c := cmpf(a, b)
				if c == 0 {
					c = strings.Compare(a.ID, b.ID)
				}
				if desc {
					c = -c
				}
				return c
			})
			var wantIDs []string
			for _, d := range want {
				wantIDs = append(wantIDs, d.ID)
			}
			for _, limit := range []int{1, 7, 60, 100} {
				t.Run(fmt.Sprintf("%s/limit=%d", sortSpec, limit), func(t *testing.T) {
					got := pages(t, h.inv, projections.DeviceFilter{Sort: sortSpec, Limit: limit})
					if diff := cmp.Diff(wantIDs, got); diff != "" {
						t.Errorf("order (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func TestListDevicesFilters(t *testing.T) {
	h := fleet(t, 60)
	all := h.devicesAll()
	count := func(pred func(d projections.Device) bool) int {
		n := 0
		for _, d := range all {
			if pred(d) {
				n++
			}
		}
		return n
	}
	net1 := netip.MustParsePrefix("10.0.0.0/26")
	tests := []struct {
		name string
		f    projections.DeviceFilter
		want func(d projections.Device) bool
	}{
		{"q name", projections.DeviceFilter{Q: "HOST-1"}, func(d projections.Device) bool { return strings.HasPrefix(d.Name, "host-1") }},
		{"q ip", projections.DeviceFilter{Q: "10.0.0.1"}, func(d projections.Device) bool { return strings.HasPrefix(d.Addresses[0].IP, "10.0.0.1") }},
		{"q mac", projections.DeviceFilter{Q: "3C:22:FB:00:00:0"}, func(d projections.Device) bool { return strings.HasPrefix(*d.MAC, "3c:22:fb:00:00:0") }},
		{"q vendor", projections.DeviceFilter{Q: "apple"}, func(d projections.Device) bool { return d.Vendor != nil && *d.Vendor == "Apple, Inc." }},
		{"q none", projections.DeviceFilter{Q: "zzz"}, func(projections.Device) bool { return false }},
		{"group", projections.DeviceFilter{Group: "g1"}, func(d projections.Device) bool { return d.Group != nil && *d.Group == "g1" }},
		{"watched", projections.DeviceFilter{Watched: ptr(true)}, func(d projections.Device) bool { return d.Watched }},
		{"not watched", projections.DeviceFilter{Watched: ptr(false)}, func(d projections.Device) bool { return !d.Watched }},
		{"ignored", projections.DeviceFilter{Ignored: ptr(true)}, func(d projections.Device) bool { return d.Ignored }},
		{"presence", projections.DeviceFilter{Presence: "online"}, func(d projections.Device) bool { return d.Presence == "online" }},
		{"network", projections.DeviceFilter{Network: &net1}, func(d projections.Device) bool {
			return net1.Contains(netip.MustParseAddr(d.Addresses[0].IP))
		}},
		{"combined", projections.DeviceFilter{Q: "lab", Watched: ptr(true)}, func(d projections.Device) bool {
			return d.Watched && strings.Contains(d.Name, "lab")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Limit = 5
			got := pages(t, h.inv, tc.f)
			want := count(tc.want)
			if len(got) != want {
				t.Errorf("got %d devices, want %d", len(got), want)
			}
			if tc.name != "q none" && want == 0 {
				t.Errorf("filter %s selects nothing: the test proves nothing", tc.name)
			}
		})
	}
}

func TestListDevicesErrors(t *testing.T) {
	h := fleet(t, 5)
	ctx := context.Background()
	p, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: 2})
	if err != nil || p.NextCursor == nil {
		t.Fatalf("first page: %v %v", p, err)
	}
	tests := []struct {
		name string
		f    projections.DeviceFilter
		want error
	}{
		{"garbage cursor", projections.DeviceFilter{Cursor: "!!!"}, projections.ErrBadCursor},
		{"base64 but not json", projections.DeviceFilter{Cursor: "aGVsbG8"}, projections.ErrBadCursor},
		{"cursor of another sort", projections.DeviceFilter{Cursor: *p.NextCursor, Sort: "-name"}, projections.ErrBadCursor},
		{"bad time in cursor", projections.DeviceFilter{Cursor: encodeCursor(devCursor{S: "last_seen", K: "yesterday"}), Sort: "last_seen"}, projections.ErrBadCursor},
		{"bad ip in cursor", projections.DeviceFilter{Cursor: encodeCursor(devCursor{S: "ip", K: "10.0.0.999"}), Sort: "ip"}, projections.ErrBadCursor},
		{"bad sort", projections.DeviceFilter{Sort: "vendor"}, ErrBadFilter},
		{"bad presence", projections.DeviceFilter{Presence: "away"}, ErrBadFilter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.inv.ListDevices(ctx, tc.f); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := h.inv.Device(ctx, "dnope"); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("Device(unknown) = %v", err)
	}
	if _, err := h.inv.WatchState("dnope"); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("WatchState(unknown) = %v", err)
	}
	if _, err := h.inv.ListEvents(ctx, projections.EventFilter{Cursor: "AAAA"}); !errors.Is(err, projections.ErrBadCursor) {
		t.Errorf("ListEvents(bad cursor) = %v", err)
	}
	if _, err := h.scans.ListScans(ctx, projections.ScanFilter{Cursor: encodeCursor(logCursor{K: []byte{1}})}); !errors.Is(err, projections.ErrBadCursor) {
		t.Errorf("ListScans(bad cursor) = %v", err)
	}
	fresh, _ := New(Options{})
	if _, err := fresh.ListDevices(ctx, projections.DeviceFilter{}); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("before Load: %v", err)
	}
}

func TestLimitClamp(t *testing.T) {
	h := fleet(t, 1100)
	ctx := context.Background()
	for _, tc := range []struct{ limit, want int }{{0, 100}, {-3, 100}, {5, 5}, {5000, 1000}} {
		p, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: tc.limit})
		if err != nil || len(p.Items) != tc.want {
			t.Errorf("limit %d: %d items, %v", tc.limit, len(p.Items), err)
		}
	}
}

func TestListEvents(t *testing.T) {
	h := newHarness(t, Options{})
	h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab"), host("10.0.0.6", macTV)))
	h.sweep(sweepAt(t0.Add(20 * time.Minute)))                                                                // both offline
	h.sweep(sweepAt(t0.Add(30*time.Minute), host("10.0.0.5", macPrinter, "dns=printer.lab")))                 // printer online
	h.sweep(sweepAt(t0.Add(60*time.Minute), host("10.0.0.5", macPrinter, "dns=printer.lab")))                 // tv nothing new
	h.sweep(sweepAt(t0.Add(70*time.Minute), host("10.0.0.5", macPrinter, "dns=printer.lab", "mdns=p.local"))) // no change of best name
	all := h.entries()
	if diff := cmp.Diff([]string{"device.discovered", "device.discovered", "device.offline", "device.offline", "device.online"}, kinds(all)); diff != "" {
		t.Fatalf("kinds: %s", diff)
	}
	printer := h.device("10.0.0.5").ID
	ctx := context.Background()
	ids := func(p projections.Page[projections.ChangeEntry]) []string {
		out := []string{}
		for _, e := range p.Items {
			out = append(out, e.ID)
		}
		return out
	}
	rev := func(pred func(e projections.ChangeEntry) bool) []projections.ChangeEntry {
		var out []projections.ChangeEntry
		for k := len(all) - 1; k >= 0; k-- {
			if pred(all[k]) {
				out = append(out, all[k])
			}
		}
		return out
	}
	since, until := t0.Add(10*time.Minute), t0.Add(25*time.Minute)
	tests := []struct {
		name string
		f    projections.EventFilter
		want []projections.ChangeEntry
	}{
		{"all newest first", projections.EventFilter{}, []projections.ChangeEntry{all[4], all[3], all[2], all[1], all[0]}},
		{"device", projections.EventFilter{Device: printer}, rev(func(e projections.ChangeEntry) bool { return e.DeviceID == printer })},
		{"unknown device", projections.EventFilter{Device: "dnope"}, nil},
		{"kinds", projections.EventFilter{Kinds: []string{"device.online", "device.discovered"}}, []projections.ChangeEntry{all[4], all[1], all[0]}},
		{"since until", projections.EventFilter{Since: &since, Until: &until}, []projections.ChangeEntry{all[3], all[2]}},
		{"device and kind", projections.EventFilter{Device: printer, Kinds: []string{"device.offline"}}, rev(func(e projections.ChangeEntry) bool {
			return e.DeviceID == printer && e.Kind == "device.offline"
		})},
	}
	if n := len(rev(func(e projections.ChangeEntry) bool { return e.DeviceID == printer })); n != 3 {
		t.Fatalf("printer has %d entries, want 3", n)
	}
	for _, tc := range tests {
		for _, limit := range []int{1, 2, 100} {
			t.Run(fmt.Sprintf("%s/limit=%d", tc.name, limit), func(t *testing.T) {
				f := tc.f
				f.Limit = limit
				var got []string
				for {
					p, err := h.inv.ListEvents(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Items) > limit {
						t.Fatalf("page of %d", len(p.Items))
					}
					got = append(got, ids(p)...)
					if p.NextCursor == nil {
						break
					}
					f.Cursor = *p.NextCursor
				}
				want := []string{}
				for _, e := range tc.want {
					want = append(want, e.ID)
				}
				if got == nil {
					got = []string{}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestListScans(t *testing.T) {
	h := newHarness(t, Options{})
	for k := range 5 {
		h.sweep(sweepAt(t0.Add(time.Duration(k) * 5 * time.Minute)))
	}
	h.ports(events.PortScanCompleted{ScanID: "p", Started: t0.Add(time.Hour), Finished: t0.Add(time.Hour + time.Minute), Ports: "22"})
	ctx := context.Background()
	p, err := h.scans.ListScans(ctx, projections.ScanFilter{Limit: 2})
	if err != nil || len(p.Items) != 2 || p.Items[0].ID != "p" || p.NextCursor == nil {
		t.Fatalf("page 1 = %s, %v", js(p), err)
	}
	p2, err := h.scans.ListScans(ctx, projections.ScanFilter{Limit: 10, Cursor: *p.NextCursor})
	if err != nil || len(p2.Items) != 4 || p2.NextCursor != nil {
		t.Fatalf("page 2 = %s, %v", js(p2), err)
	}
	since := t0.Add(9 * time.Minute)
	until := t0.Add(16 * time.Minute)
	p3, err := h.scans.ListScans(ctx, projections.ScanFilter{Source: "sweep:lab", Since: &since, Until: &until})
	if err != nil || len(p3.Items) != 2 {
		t.Fatalf("window = %s, %v", js(p3), err)
	}
	if s := p3.Items[0]; s.Source != "sweep:lab" || s.Started.Before(since) || s.Started.After(until) {
		t.Errorf("scan = %s", js(s))
	}
	p4, _ := h.scans.ListScans(ctx, projections.ScanFilter{Source: "nobody"})
	if len(p4.Items) != 0 {
		t.Errorf("source filter: %s", js(p4))
	}
}

func TestStatsAndGroups(t *testing.T) {
	h := fleet(t, 40)
	ctx := context.Background()
	st, err := h.inv.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := h.devicesAll()
	watched, groups := 0, map[string]int{}
	nets := map[string]int{}
	for _, d := range all {
		if d.Watched {
			watched++
		}
		if d.Group != nil {
			groups[*d.Group]++
		}
		nets[d.Addresses[0].Network]++
	}
	if st.Devices != 40 || st.ByPresence["online"] != 40 || st.ByPresence["offline"] != 0 || st.Watched != watched ||
		st.BySource["sweep:lab"] != 40 || !cmp.Equal(st.ByGroup, groups) || !cmp.Equal(st.ByNetwork, nets) {
		t.Errorf("stats = %s", js(st))
	}
	// The newest device: latest first sighting, greatest id.
	newest := all[0]
	for _, d := range all {
		if d.FirstSeen.After(newest.FirstSeen) || (d.FirstSeen.Equal(newest.FirstSeen) && d.ID > newest.ID) {
			newest = d
		}
	}
	if st.NewestDevice == nil || st.NewestDevice.ID != newest.ID {
		t.Errorf("newest = %v, want %s", st.NewestDevice, newest.ID)
	}
	gs, err := h.inv.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []projections.Group
	for _, g := range sortedKeys(groups) {
		want = append(want, projections.Group{Name: g, Devices: groups[g]})
	}
	if diff := cmp.Diff(want, gs); diff != "" || len(gs) == 0 {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// Stats returns copies: changing them changes nothing inside.
	st.ByPresence["online"] = -1
	st2, _ := h.inv.Stats(ctx)
	if st2.ByPresence["online"] != 40 {
		t.Errorf("stats map shared with the cache")
	}
}
