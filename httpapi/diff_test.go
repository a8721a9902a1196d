package httpapi_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// fakeEarliest is the earliest instant the fake's history can show.
var fakeEarliest = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

// The fake's history: each fixture device exists from its first_seen on,
// as it is now; the instants asked are recorded.
func (f *fakeInventory) historyAt(at time.Time) ([]history.Device, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	f.ats = append(f.ats, at)
	if at.Before(fakeEarliest) {
		return nil, &history.CompactedError{At: at, Earliest: fakeEarliest}
	}
	var out []history.Device
	for _, d := range f.devices {
		if d.FirstSeen.After(at) {
			continue
		}
		hd := history.Device{ID: d.ID, Name: d.Name, Names: map[string]history.Name{}, MAC: d.MAC, Vendor: d.Vendor,
			Addresses: []history.Address{}, Ports: []history.Port{}, Label: d.Label, Group: d.Group, Watched: d.Watched, Ignored: d.Ignored,
			Presence: d.Presence, FirstSeen: d.FirstSeen.UTC(), Sources: []string{}}
		for src, n := range d.Names {
			hd.Names[src] = history.Name{Name: n.Name}
		}
		for _, a := range d.Addresses {
			ha := history.Address{IP: a.IP, Network: a.Network, FirstSeen: a.FirstSeen.UTC()}
			if a.RetiredAt != nil {
				r := a.RetiredAt.UTC()
				ha.RetiredAt = &r
			}
			hd.Addresses = append(hd.Addresses, ha)
		}
		out = append(out, hd)
	}
	slices.SortFunc(out, func(a, b history.Device) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *fakeInventory) DeviceAt(_ context.Context, id string, at time.Time) (history.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ds, err := f.historyAt(at)
	if err != nil {
		return history.Device{}, err
	}
	for _, d := range ds {
		if d.ID == id {
			return d, nil
		}
	}
	if id == "dev-phone2" { // merged into dev-nas at every instant
		return history.Device{}, fakeMergedError{into: "dev-nas"}
	}
	return history.Device{}, projections.ErrNotFound
}

// fakeMergedError is what the inventory answers for a device merged into
// another at the instant asked.
type fakeMergedError struct{ into string }

func (e fakeMergedError) Error() string      { return "merged into " + e.into }
func (e fakeMergedError) Unwrap() error      { return projections.ErrNotFound }
func (e fakeMergedError) MergedInto() string { return e.into }

func (f *fakeInventory) DevicesAt(_ context.Context, at time.Time) ([]history.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.historyAt(at)
}

func (f *fakeInventory) StatsAt(_ context.Context, at time.Time) (history.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ds, err := f.historyAt(at)
	if err != nil {
		return history.Stats{}, err
	}
	return history.Stats{At: at, Devices: len(ds), ByPresence: map[string]int{}, ByGroup: map[string]int{}, ByNetwork: map[string]int{}, BySource: map[string]int{}}, nil
}

func (f *fakeInventory) Diff(_ context.Context, from, to time.Time) (history.Diff, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.historyAt(from)
	if err != nil {
		return history.Diff{}, err
	}
	b, err := f.historyAt(to)
	if err != nil {
		return history.Diff{}, err
	}
	d := history.Diff{From: from, To: to, Added: []history.Device{}, Removed: []history.Device{}, Changed: []history.Changed{}}
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y history.Device) bool { return y.ID == x.ID }) {
			d.Added = append(d.Added, x)
		}
	}
	if len(a) > 0 {
		d.Changed = append(d.Changed, history.Changed{ID: a[0].ID, Name: a[0].Name,
			Fields: map[string]history.FieldChange{"presence": {From: "offline", To: a[0].Presence}}})
	}
	return d, nil
}

var _ httpapi.HistoryReader = (*fakeInventory)(nil)

// atNames checks that a page of devices at an instant holds exactly
// the devices of these names, in order.
func atNames(names ...string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		p := decode[atPageBody](t, body)
		var got []string
		for _, d := range p.Items {
			got = append(got, d.Name)
		}
		if !slices.Equal(got, names) {
			t.Fatalf("devices %q, want %q", got, names)
		}
	}
}

func TestHistoryAt(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	q := func(s string) string { return url.QueryEscape(s) }
	all := len(e.inv.devices)
	tests := []struct {
		name, target string
		status       int
		slug         string
		check        func(t *testing.T, body []byte)
	}{
		{"list now", "/api/devices?at=" + q("2026-03-02T12:00:00Z"), 200, "", func(t *testing.T, body []byte) {
			p := decode[struct {
				At         time.Time        `json:"at"`
				Items      []history.Device `json:"items"`
				NextCursor *string          `json:"next_cursor"`
			}](t, body)
			if len(p.Items) != all || p.NextCursor != nil || !p.At.Equal(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)) {
				t.Fatalf("page %+v", p)
			}
		}},
		{"list in an offset, before every device", "/api/devices?at=" + q("2026-02-02T01:00:00+01:00"), 200, "", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), `"at":"2026-02-02T00:00:00Z","items":[],"next_cursor":null`) {
				t.Fatalf("body %s", body)
			}
		}},
		{"list before the kept history", "/api/devices?at=" + q("2026-01-31T23:59:59Z"), 410, "history-compacted", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), `"earliest":"2026-02-01T00:00:00Z"`) || !strings.Contains(string(body), "2026-02-01T00:00:00Z or later") {
				t.Fatalf("body %s", body)
			}
		}},
		{"list with a bad at", "/api/devices?at=yesterday", 400, "invalid-query", nil},
		{"list in the future", "/api/devices?at=" + q("2099-01-01T00:00:00Z"), 400, "invalid-query", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), "in the future") {
				t.Fatalf("body %s", body)
			}
		}},
		{"list with an empty at", "/api/devices?at=", 400, "invalid-query", nil},
		{"list at with a group", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&group=lab", 200, "", atNames("nas")},
		{"list at with q on a name by source", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&q=NAS.LAN", 200, "", atNames("nas")},
		{"list at with watched and presence", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&watched=true&presence=online&q=nas", 200, "", atNames("nas")},
		{"list at with q matching nothing", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&q=no-such-device", 200, "", atNames()},
		{"list at by ip", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&sort=ip", 200, "", atNames("phone", "switch", "nas")},
		{"list at by last_seen", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&sort=last_seen", 400, "invalid-query", wantSortNotKept("last_seen")},
		{"list at by -last_seen", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&sort=-last_seen", 400, "invalid-query", wantSortNotKept("-last_seen")},
		{"list at by an unknown sort", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&sort=vendor", 400, "invalid-query", nil},
		{"list at with a bad presence", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&presence=gone", 400, "invalid-query", nil},
		{"list at with a bad cursor", "/api/devices?at=" + q("2026-03-02T12:00:00Z") + "&cursor=zz", 400, "invalid-query", nil},
		{"device", "/api/devices/dev-nas?at=" + q("2026-03-02T12:00:00Z"), 200, "", func(t *testing.T, body []byte) {
			d := decode[history.Device](t, body)
			if d.ID != "dev-nas" {
				t.Fatalf("device %+v", d)
			}
		}},
		{"device merged into another then", "/api/devices/dev-phone2?at=" + q("2026-03-02T12:00:00Z"), 404, "device-merged", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), `"merged_into":"dev-nas"`) {
				t.Fatalf("body %s", body)
			}
		}},
		{"device before it existed", "/api/devices/dev-nas?at=" + q("2026-02-02T00:00:00Z"), 404, "device-not-found", nil},
		{"device before the kept history", "/api/devices/dev-nas?at=" + q("2025-12-01T00:00:00Z"), 410, "history-compacted", nil},
		{"device with a bad at", "/api/devices/dev-nas?at=2026-13-01T00:00:00Z", 400, "invalid-query", nil},
		{"device with at and another parameter", "/api/devices/dev-nas?at=" + q("2026-03-02T12:00:00Z") + "&limit=2", 400, "invalid-query", nil},
		{"stats", "/api/stats?at=" + q("2026-03-02T12:00:00Z"), 200, "", func(t *testing.T, body []byte) {
			s := decode[history.Stats](t, body)
			if s.Devices != all {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"stats before the kept history", "/api/stats?at=" + q("2020-01-01T00:00:00Z"), 410, "history-compacted", nil},
		{"stats with a bad at", "/api/stats?at=now", 400, "invalid-query", nil},
		{"diff", "/api/diff?from=" + q("2026-02-02T00:00:00Z") + "&to=" + q("2026-03-02T12:00:00Z"), 200, "", func(t *testing.T, body []byte) {
			d := decode[history.Diff](t, body)
			if len(d.Added) != all || len(d.Removed) != 0 || !d.From.Equal(time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("diff %+v", d)
			}
		}},
		{"diff before the kept history", "/api/diff?from=" + q("2026-01-02T00:00:00Z") + "&to=" + q("2026-03-02T12:00:00Z"), 410, "history-compacted", nil},
		{"diff without to", "/api/diff?from=" + q("2026-02-02T00:00:00Z"), 400, "invalid-query", nil},
		{"diff backwards", "/api/diff?from=" + q("2026-03-02T00:00:00Z") + "&to=" + q("2026-02-02T12:00:00Z"), 400, "invalid-query", nil},
		{"diff with an unknown parameter", "/api/diff?from=" + q("2026-02-02T00:00:00Z") + "&to=" + q("2026-03-02T12:00:00Z") + "&bogus=1", 400, "invalid-query", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("GET", tc.target, "", bearer(tokRead))
			if tc.slug != "" {
				wantProblem(t, resp, body, tc.status, tc.slug)
			} else {
				wantStatus(t, resp, body, tc.status)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
}

// wantSortNotKept checks the 400 of sort=last_seen with at=: one error,
// on the sort parameter, saying last_seen is not kept for past instants.
func wantSortNotKept(sort string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var p problemDoc
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Errors) != 1 || p.Errors[0].Parameter != "sort" || p.Errors[0].Pointer != nil ||
			!strings.Contains(p.Errors[0].Detail, "last_seen is not kept for past instants") || !strings.Contains(p.Errors[0].Detail, `"`+sort+`"`) {
			t.Fatalf("errors %s", body)
		}
		if want := `query parameter "sort": ` + p.Errors[0].Detail; p.Detail != want || p.Title != "Query parameter is not valid" || p.Status != 400 {
			t.Fatalf("problem %s", body)
		}
	}
}

// TestHistoryAtSort: the list at an instant takes the live list's sorts
// but last_seen, with its semantics (names case-insensitive, the current
// address numerically with IPv4 before IPv6 and none first, ties by id,
// descending the exact reverse), one page or many.
func TestHistoryAtSort(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	e.inv.mu.Lock()
	for _, d := range []projections.Device{
		// Named like nas but for the case: after it by id.
		{ID: "dev-nas2", Name: "NAS", Presence: projections.PresenceOnline, FirstSeen: t0.Add(-48 * time.Hour),
			Addresses: []projections.Address{{IP: "192.168.1.9", Network: "192.168.1.0/24", FirstSeen: t0}}},
		// IPv6 only: after every IPv4 address.
		{ID: "dev-alpha", Name: "Alpha", Presence: projections.PresenceOnline, FirstSeen: t0.Add(time.Hour),
			Addresses: []projections.Address{{IP: "fd00::1", Network: "fd00::/64", FirstSeen: t0}}},
		// Dual stack: the address first seen last is its current one
		// (last_seen is not kept); the retired one never counts.
		{ID: "dev-printer", Name: "printer", Presence: projections.PresenceOnline, FirstSeen: t0.Add(-time.Hour),
			Addresses: []projections.Address{
				{IP: "10.0.0.1", Network: "10.0.0.0/24", FirstSeen: t0.Add(-time.Hour), RetiredAt: ptr(t0)},
				{IP: "192.168.1.100", Network: "192.168.1.0/24", FirstSeen: t0.Add(-time.Hour)},
				{IP: "fd00::2", Network: "fd00::/64", FirstSeen: t0},
			}},
	} {
		e.inv.devices[d.ID] = d
	}
	e.inv.mu.Unlock()
	at := url.QueryEscape("2026-03-02T12:00:00Z")
	// The fixture's nas, phone and switch are first seen at t0; the
	// switch's only address is retired, so still its current one.
	for _, tc := range []struct {
		sort string
		want []string
	}{
		{"", []string{"Alpha", "nas", "NAS", "phone", "printer", "switch"}},
		{"name", []string{"Alpha", "nas", "NAS", "phone", "printer", "switch"}},
		{"-name", []string{"switch", "printer", "phone", "NAS", "nas", "Alpha"}},
		{"ip", []string{"phone", "switch", "NAS", "nas", "Alpha", "printer"}},
		{"-ip", []string{"printer", "Alpha", "nas", "NAS", "switch", "phone"}},
		{"first_seen", []string{"NAS", "printer", "nas", "phone", "switch", "Alpha"}},
		{"-first_seen", []string{"Alpha", "switch", "phone", "nas", "printer", "NAS"}},
	} {
		t.Run("sort="+tc.sort, func(t *testing.T) {
			base := "/api/devices?at=" + at
			if tc.sort != "" {
				base += "&sort=" + tc.sort
			}
			resp, body := e.do("GET", base, "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			atNames(tc.want...)(t, body)
			for _, limit := range []string{"1", "4"} {
				var names []string
				target := base + "&limit=" + limit
				for range 10 {
					resp, body := e.do("GET", target, "", bearer(tokRead))
					wantStatus(t, resp, body, 200)
					p := decode[atPageBody](t, body)
					for _, d := range p.Items {
						names = append(names, d.Name)
					}
					if p.NextCursor == nil {
						break
					}
					target = base + "&limit=" + limit + "&cursor=" + url.QueryEscape(*p.NextCursor)
				}
				if !slices.Equal(names, tc.want) {
					t.Fatalf("pages of %s gave %q, want %q", limit, names, tc.want)
				}
			}
		})
	}
	t.Run("a cursor of another sort", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices?limit=1&sort=ip&at="+at, "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p := decode[atPageBody](t, body)
		if p.NextCursor == nil {
			t.Fatalf("no cursor: %s", body)
		}
		resp, body = e.do("GET", "/api/devices?limit=1&sort=-ip&at="+at+"&cursor="+url.QueryEscape(*p.NextCursor), "", bearer(tokRead))
		p2 := wantProblem(t, resp, body, 400, "invalid-query")
		if len(p2.Errors) != 1 || p2.Errors[0].Parameter != "cursor" {
			t.Fatalf("problem %s", body)
		}
	})
}

// Paging of the list at an instant: by name, limit and the cursor given.
func TestHistoryAtPaging(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	at := url.QueryEscape("2026-03-02T12:00:00Z")
	var names []string
	target := "/api/devices?limit=1&at=" + at
	for range 10 {
		resp, body := e.do("GET", target, "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p := decode[atPageBody](t, body)
		for _, d := range p.Items {
			names = append(names, d.Name)
		}
		if p.NextCursor == nil {
			break
		}
		target = "/api/devices?limit=1&at=" + at + "&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if len(names) != len(e.inv.devices) || !slices.IsSorted(names) {
		t.Fatalf("pages gave %v", names)
	}
}

// getDiff's shared statuses: 401 without a token, 429 past the rate,
// 500 when the inventory fails (without leaking it).
func TestDiffErrors(t *testing.T) {
	target := "/api/diff?from=" + url.QueryEscape("2026-02-02T00:00:00Z") + "&to=" + url.QueryEscape("2026-03-02T12:00:00Z")
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", target, "")
	wantProblem(t, resp, body, 401, "token-missing")
	e = newEnv(t, httpapi.Config{ClientRate: 0.001, ClientBurst: 1})
	resp, body = e.do("GET", target, "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	resp, body = e.do("GET", target, "", bearer(tokRead))
	wantProblem(t, resp, body, 429, "rate-limited")
	e = newEnv(t, httpapi.Config{})
	e.inv.fail = true
	resp, body = e.do("GET", target, "", bearer(tokRead))
	wantProblem(t, resp, body, 500, "internal")
	if strings.Contains(string(body), "secret-path") {
		t.Fatalf("500 leaks: %s", body)
	}
}

// atPageBody is a page of GET /api/devices?at=.
type atPageBody struct {
	At         time.Time        `json:"at"`
	Items      []history.Device `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}
