package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// variedFleet builds n devices that use every part of the device view:
// names from several sources with characters JSON escapes, UPnP and
// DNS-SD services, open ports, moved (retired) addresses, edits, watches,
// offline devices, MAC-less devices, and event times in a zone other
// than UTC.
func variedFleet(t testing.TB, n int) *harness {
	h := newHarness(t, Options{})
	zone := time.FixedZone("X", 2*3600+30*60)
	at := t0.In(zone)
	var hosts []events.SweepHost
	for k := range n {
		ip := fmt.Sprintf("10.0.%d.%d", k/250, k%250+1)
		mac := fmt.Sprintf("00:11:22:00:%02x:%02x", k>>8, k&0xff)
		switch k % 4 {
		case 1:
			mac = fmt.Sprintf("3e:22:fb:00:%02x:%02x", k>>8, k&0xff) // locally administered
		case 2:
			mac = "" // off-link: identity by address
		}
		hs := host(ip, mac)
		hs.Network = ""
		if k%3 == 0 {
			hs.Names = events.NamesOf(map[string]string{"dns": fmt.Sprintf("h%d.lab", k), "mdns": fmt.Sprintf("H%d <b>&amp;\"Ü\u2028", k)})
		}
		if k%5 == 0 {
			hs.UPnP = &events.UPnP{FriendlyName: fmt.Sprintf("TV %d\t'<>'", k), Manufacturer: "Sämsung & co"}
			hs.Services = []events.Service{{Instance: fmt.Sprintf("TV %d", k), Type: "_airplay._tcp", Port: 7000}}
		}
		hosts = append(hosts, hs)
	}
	s := sweepAt(at, hosts...)
	s.Networks = nil
	h.sweep(s)
	var res []events.PortResult
	for k := 0; k < n; k += 7 {
		res = append(res, events.PortResult{IP: hosts[k].IP, Open: []uint16{22, 7000, 8080}})
	}
	h.ports(events.PortScanCompleted{ScanID: "p1", Started: at.Add(time.Minute), Finished: at.Add(2 * time.Minute),
		Ports: "22,8080", Targets: len(res), Complete: true, Results: res})
	// A third of the devices move to a new address (the old one retires
	// after the grace) and the rest stay unseen: they go offline.
	var moved []events.SweepHost
	for k := 0; k < n; k += 3 {
		hs := hosts[k]
		if hs.MAC == "" {
			continue
		}
		hs.IP = fmt.Sprintf("10.1.%d.%d", k/250, k%250+1)
		moved = append(moved, hs)
	}
	s = sweepAt(at.Add(7*time.Hour), moved...)
	s.Networks = nil
	h.sweep(s)
	for k, d := range h.devicesAll() {
		e := events.DeviceEdited{}
		switch k % 4 {
		case 0:
			e.Label = ptr(fmt.Sprintf("Label «%d» </script>", k))
			e.Notes = ptr("line one\nline two\ttabbed\r\n")
		case 1:
			e.Group = ptr(fmt.Sprintf("g%d", k%3))
			e.Type = ptr("printer")
		case 2:
			e.Ignored = ptr(true)
		}
		if k%4 != 3 {
			h.edit(d.ID, "alice <admin>", e, at.Add(8*time.Hour))
		}
		if k%6 == 0 {
			h.watch(d.ID, "bob", true, at.Add(8*time.Hour))
		}
	}
	return h
}

// utcTimes matches every JSON time of a device document.
var utcTimes = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+([^"]*)"`)

// checkDeviceJSON asserts that b is d as the API shows it: the same
// values, every time in UTC ("Z"), and exactly json.Marshal's bytes.
func checkDeviceJSON(t *testing.T, b []byte, d projections.Device) {
	t.Helper()
	var got projections.Device
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("device %s: %v", d.ID, err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Fatalf("device %s JSON differs from the view (-view +json):\n%s", d.ID, diff)
	}
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Fatalf("device %s: not json.Marshal's bytes:\n got %s\nwant %s", d.ID, b, again)
	}
	times := utcTimes.FindAllSubmatch(b, -1)
	if len(times) < 4 {
		t.Fatalf("device %s: %d times in %s", d.ID, len(times), b)
	}
	for _, m := range times {
		if string(m[1]) != "Z" {
			t.Fatalf("device %s: time %s is not in UTC", d.ID, m[0])
		}
	}
}

func TestDeviceJSON(t *testing.T) {
	h := variedFleet(t, 120)
	ctx := context.Background()
	all := h.devicesAll()
	if len(all) != 120 {
		t.Fatalf("%d devices, want 120", len(all))
	}
	for round := range 2 { // the first round encodes, the second reads the cache a list filled
		if round == 1 {
			listJSON(t, h.inv, projections.DeviceFilter{Limit: MaxLimit})
			if n := cachedDocs(h.inv); n != len(all) {
				t.Fatalf("%d documents cached after a list of every device, want %d", n, len(all))
			}
		}
		for _, d := range all {
			b, err := h.inv.DeviceJSON(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			checkDeviceJSON(t, b, d)
		}
		if round == 0 && len(all[0].Addresses) == 0 {
			t.Fatal("fixture without addresses")
		}
	}
	if _, err := h.inv.DeviceJSON(ctx, "dnope"); !isNotFound(err) {
		t.Errorf("unknown id: err = %v, want ErrNotFound", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.inv.DeviceJSON(cancelled, all[0].ID); err == nil {
		t.Error("cancelled context: no error")
	}
}

func isNotFound(err error) bool {
	return err != nil && errors.Is(err, projections.ErrNotFound)
}

func TestAppendDevicesJSON(t *testing.T) {
	h := variedFleet(t, 90)
	ctx := context.Background()
	tests := []struct {
		name string
		f    projections.DeviceFilter
	}{
		{"default", projections.DeviceFilter{}},
		{"-ip by 7", projections.DeviceFilter{Sort: "-ip", Limit: 7}},
		{"last_seen by 13", projections.DeviceFilter{Sort: "last_seen", Limit: 13}},
		{"-first_seen by 1000", projections.DeviceFilter{Sort: "-first_seen", Limit: 1000}},
		{"q name", projections.DeviceFilter{Q: "h3", Limit: 5}},
		{"q non-ASCII", projections.DeviceFilter{Q: "ü", Limit: 4}},
		{"q none", projections.DeviceFilter{Q: "nothing matches this"}},
		{"group", projections.DeviceFilter{Group: "g1", Sort: "-name", Limit: 3}},
		{"presence", projections.DeviceFilter{Presence: "offline", Limit: 9}},
		{"watched and not ignored", projections.DeviceFilter{Watched: ptr(true), Ignored: ptr(false), Limit: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			pages := 0
			for {
				want, err := h.inv.ListDevices(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				items, next := listJSON(t, h.inv, f)
				if len(items) != len(want.Items) {
					t.Fatalf("%d items, want %d", len(items), len(want.Items))
				}
				for k, b := range items {
					checkDeviceJSON(t, b, want.Items[k])
				}
				if diff := cmp.Diff(want.NextCursor, next); diff != "" {
					t.Fatalf("next cursor (-want +got):\n%s", diff)
				}
				pages++
				if next == nil {
					break
				}
				f.Cursor = *next
			}
			if f.Limit != 0 && f.Limit < 20 && f.Q == "" && pages < 2 {
				t.Errorf("only %d page(s): the case tests no paging", pages)
			}
		})
	}
	bad := []projections.DeviceFilter{{Sort: "color"}, {Presence: "asleep"}, {Cursor: "bm9wZQ"}, {Sort: "ip", Cursor: mustCursor(t, h, "name")}}
	for _, f := range bad {
		out, next, err := h.inv.AppendDevicesJSON(ctx, []byte("kept"), f)
		if err == nil || string(out) != "kept" || next != nil {
			t.Errorf("filter %+v: %q, %v, %v; want the buffer unchanged and an error", f, out, next, err)
		}
	}
}

// mustCursor returns a next cursor of the given sort.
func mustCursor(t *testing.T, h *harness, sort string) string {
	t.Helper()
	_, next := listJSON(t, h.inv, projections.DeviceFilter{Sort: sort, Limit: 1})
	if next == nil {
		t.Fatalf("no cursor of %s", sort)
	}
	return *next
}

// listJSON returns the documents AppendDevicesJSON appends, split, and
// the next cursor.
func listJSON(t *testing.T, inv *Inventory, f projections.DeviceFilter) ([]json.RawMessage, *string) {
	t.Helper()
	out, next, err := inv.AppendDevicesJSON(context.Background(), []byte("["), f)
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(append(out, ']'), &items); err != nil {
		t.Fatalf("not a list of documents: %v: %s", err, out)
	}
	return items, next
}

// TestDeviceJSONInvalidation: a cached document never outlives a change
// of its device, and untouched devices stay correct too.
func TestDeviceJSONInvalidation(t *testing.T) {
	h := variedFleet(t, 20)
	ctx := context.Background()
	all := h.devicesAll()
	listJSON(t, h.inv, projections.DeviceFilter{Limit: MaxLimit}) // fills the cache
	steps := []struct {
		name string
		run  func()
	}{
		{"edit", func() { h.edit(all[3].ID, "carol", events.DeviceEdited{Label: ptr("renamed")}, t0.Add(9*time.Hour)) }},
		{"watch", func() { h.watch(all[4].ID, "carol", true, t0.Add(9*time.Hour)) }},
		{"presence", func() {
			s := sweepAt(t0.Add(10 * time.Hour)) // evidence of absence: the moved devices go offline
			s.Networks = nil
			h.sweep(s)
		}},
		{"sweep", func() {
			h.sweep(sweepAt(t0.Add(11*time.Hour), host(all[5].Addresses[0].IP, "", "netbios=NEWNAME")))
		}},
		{"ports", func() {
			h.ports(events.PortScanCompleted{ScanID: "p9", Started: t0.Add(12 * time.Hour), Finished: t0.Add(12*time.Hour + time.Minute),
				Ports: "22,8080", Complete: true, Targets: 1,
				Results: []events.PortResult{{IP: all[6].Addresses[0].IP, Open: []uint16{443}}}})
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := h.devicesAll()
			st.run()
			after := h.devicesAll()
			if cmp.Equal(before, after) {
				t.Fatal("the step changed no device")
			}
			for _, d := range after {
				b, err := h.inv.DeviceJSON(ctx, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				checkDeviceJSON(t, b, d)
			}
			for round := range 2 { // encoded, then from the cache
				items, _ := listJSON(t, h.inv, projections.DeviceFilter{Limit: MaxLimit})
				for k, b := range items {
					checkDeviceJSON(t, b, after[k])
				}
				if n := cachedDocs(h.inv); n != len(after) {
					t.Fatalf("round %d: %d documents cached, want %d", round, n, len(after))
				}
			}
		})
	}
	// A reload starts without any cached document.
	h.inv = h.load()
	for _, d := range h.devicesAll() {
		b, err := h.inv.DeviceJSON(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkDeviceJSON(t, b, d)
	}
}

// TestDeviceJSONConcurrent reads documents while events are applied (run
// with -race).
func TestDeviceJSONConcurrent(t *testing.T) {
	h := variedFleet(t, 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := []string{}
	for _, d := range h.devicesAll() {
		ids = append(ids, d.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				if _, err := h.inv.DeviceJSON(ctx, ids[(n+g)%len(ids)]); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
				if _, _, err := h.inv.AppendDevicesJSON(ctx, nil, projections.DeviceFilter{Limit: 10, Q: "h"}); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		})
	}
	for k := range 30 {
		h.edit(ids[k%len(ids)], "carol", events.DeviceEdited{Notes: ptr(fmt.Sprint("note ", k))}, t0.Add(9*time.Hour))
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range h.devicesAll() {
		b, err := h.inv.DeviceJSON(context.Background(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkDeviceJSON(t, b, d)
	}
}

// TestUTCView: the inventory keeps times in UTC, but the cached document
// must show UTC even if a time in another zone slipped in, as the API's
// typed path would.
func TestUTCView(t *testing.T) {
	zone := time.FixedZone("X", -(3*3600 + 30*60))
	at := t0.In(zone)
	mk := func() projections.Device {
		retired := at.Add(time.Hour)
		return projections.Device{
			ID: "dx", FirstSeen: at, LastSeen: at,
			Names:     map[string]projections.Name{"dns": {Name: "a", LastConfirmed: at}},
			Evidence:  map[string]projections.Evidence{"name": {Source: "dns", Time: at}},
			Addresses: []projections.Address{{IP: "10.0.0.1", FirstSeen: at, LastSeen: at, RetiredAt: &retired}},
			Ports:     []projections.Port{{Port: 22, Proto: "tcp", FirstSeen: at, LastSeen: at}},
		}
	}
	v, orig := mk(), mk()
	utcView(&v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	times := utcTimes.FindAllSubmatch(b, -1)
	if len(times) != 9 {
		t.Fatalf("%d times in %s, want 9", len(times), b)
	}
	for _, m := range times {
		if string(m[1]) != "Z" {
			t.Errorf("time %s is not in UTC", m[0])
		}
	}
	if diff := cmp.Diff(orig, v); diff != "" { // cmp compares times with Equal
		t.Errorf("utcView changed an instant (-before +after):\n%s", diff)
	}
}

// cachedDocs counts the devices with a document of the current version.
func cachedDocs(inv *Inventory) int {
	n := 0
	for _, d := range inv.devs {
		if e := inv.docs.of(d).Load(); e != nil && e.version == inv.version {
			n++
		}
	}
	return n
}

// TestJSONCacheFill: lists fill the cache, single reads do not, a change
// drops every older document, and the cache stays within jsonCacheMax.
func TestJSONCacheFill(t *testing.T) {
	h := variedFleet(t, 60)
	ctx := context.Background()
	all := h.devicesAll()
	for _, d := range all {
		if _, err := h.inv.DeviceJSON(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := cachedDocs(h.inv); n != 0 {
		t.Fatalf("single reads cached %d documents", n)
	}
	listJSON(t, h.inv, projections.DeviceFilter{Limit: 25})
	if n := cachedDocs(h.inv); n != 25 {
		t.Fatalf("a page of 25 cached %d documents", n)
	}
	h.edit(all[0].ID, "carol", events.DeviceEdited{Label: ptr("new")}, t0.Add(9*time.Hour))
	if n := cachedDocs(h.inv); n != 0 {
		t.Fatalf("%d documents of the current version right after a change", n)
	}
	listJSON(t, h.inv, projections.DeviceFilter{Limit: 10})
	stale := 0
	for _, d := range h.inv.devs {
		if e := h.inv.docs.of(d).Load(); e != nil && e.version != h.inv.version {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d documents of older versions still held after the first list of the new one", stale)
	}
	if n := cachedDocs(h.inv); n != 10 {
		t.Errorf("%d documents cached, want 10", n)
	}

	// With room for about three documents, a list of every device keeps
	// the last ones it encoded, and every answer stays right.
	h.tick(t0.Add(10 * time.Hour))
	c := h.inv.jsonCacheNow()
	first, err := h.inv.DeviceJSON(ctx, all[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	c.max = int64(3*len(first) + len(first)/2)
	items, _ := listJSON(t, h.inv, projections.DeviceFilter{Limit: MaxLimit})
	if len(items) != len(all) {
		t.Fatalf("%d items, want %d", len(items), len(all))
	}
	if n := cachedDocs(h.inv); n < 1 || n > 4 {
		t.Errorf("%d documents cached with room for about 3", n)
	}
	if c.bytes > c.max {
		t.Errorf("cache holds %d bytes, more than %d", c.bytes, c.max)
	}
	for _, d := range h.devicesAll() {
		b, err := h.inv.DeviceJSON(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkDeviceJSON(t, b, d)
	}
}

// TestJSONCacheClock: past the bound the cache evicts a document not
// read since the hand last passed, and keeps the ones read.
func TestJSONCacheClock(t *testing.T) {
	h := variedFleet(t, 20)
	ctx := context.Background()
	all := h.devicesAll()
	c := h.inv.jsonCacheNow()
	// Cache A, B and C, then read A.
	_, next := listJSON(t, h.inv, projections.DeviceFilter{Limit: 3})
	if _, err := h.inv.DeviceJSON(ctx, all[0].ID); err != nil {
		t.Fatal(err)
	}
	d, err := h.inv.DeviceJSON(ctx, all[3].ID)
	if err != nil {
		t.Fatal(err)
	}
	c.max = c.bytes + int64(len(d)) - 1 // D fits once one document goes
	if items, _ := listJSON(t, h.inv, projections.DeviceFilter{Limit: 1, Cursor: *next}); len(items) != 1 {
		t.Fatal("no fourth device")
	}
	cached := func(d projections.Device) bool {
		e := h.inv.docs.of(h.inv.devs[d.ID]).Load()
		return e != nil && e.version == h.inv.version
	}
	got := []bool{cached(all[0]), cached(all[1]), cached(all[2]), cached(all[3])}
	if want := []bool{true, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("A, B, C, D cached: %v, want %v", got, want)
	}
	if c.bytes > c.max {
		t.Errorf("cache holds %d bytes, more than %d", c.bytes, c.max)
	}
}

// TestDocSlots: every live device has its own slot; a freed slot is
// reused empty, so a new device never starts with another's document.
func TestDocSlots(t *testing.T) {
	var s docSlots
	a, b, c := &device{ID: "a"}, &device{ID: "b"}, &device{ID: "c"}
	s.add(a)
	s.add(b)
	if a.slot == b.slot {
		t.Fatal("two devices share a slot")
	}
	s.of(a).Store(&encodedDevice{version: 1, json: []byte(`{"id":"a"}`)})
	s.free(a)
	s.add(c)
	if c.slot != a.slot {
		t.Fatalf("the freed slot %d was not reused (got %d)", a.slot, c.slot)
	}
	if e := s.of(c).Load(); e != nil {
		t.Fatalf("a new device starts with the document %s", e.json)
	}
	if len(s.slots) != 2 {
		t.Fatalf("%d slots for two live devices", len(s.slots))
	}
}
