package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
)

// Tokens the fake authenticator knows. They look like real tokens: jct_
// and 43 base62 characters.
const (
	tokRead    = "jct_R3adR3adR3adR3adR3adR3adR3adR3adR3adR3adR3a"
	tokWrite   = "jct_Wr1teWr1teWr1teWr1teWr1teWr1teWr1teWr1teWr1"
	tokExpired = "jct_Exp1redExp1redExp1redExp1redExp1redExp1redE"
	tokRevoked = "jct_Rev0kedRev0kedRev0kedRev0kedRev0kedRev0kedR"
	tokBroken  = "jct_Br0kenBr0kenBr0kenBr0kenBr0kenBr0kenBr0kenB" // the authenticator fails
)

var errInternalSecret = errors.New("bbolt: page 42 corrupt at /var/lib/secret-path")

// fakeAuth knows the tokens above and counts its calls.
type fakeAuth struct {
	mu    sync.Mutex
	calls int
	last  string
}

func (a *fakeAuth) Authenticate(_ context.Context, secret string) (projections.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	a.last = secret
	switch secret {
	case tokRead:
		return projections.Principal{TokenID: "t-read", Name: "dashboard", Mode: events.ModeRead}, nil
	case tokWrite:
		return projections.Principal{TokenID: "t-write", Name: "ansible", Mode: events.ModeReadWrite}, nil
	case tokExpired, tokRevoked:
		return projections.Principal{}, projections.ErrInvalidToken
	case tokBroken:
		return projections.Principal{}, errInternalSecret
	}
	return projections.Principal{}, projections.ErrInvalidToken
}

func (a *fakeAuth) callCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

type fakeReady struct {
	mu    sync.Mutex
	ready bool
	panic bool
}

func (r *fakeReady) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panic {
		panic("readiness exploded: " + errInternalSecret.Error())
	}
	return r.ready
}

func (r *fakeReady) set(v bool) {
	r.mu.Lock()
	r.ready = v
	r.mu.Unlock()
}

func ptr[T any](v T) *T { return &v }

// cest is a non-UTC zone: the API must still answer in UTC.
var cest = time.FixedZone("CEST", 2*3600)

func fixtureDevices() map[string]projections.Device {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return map[string]projections.Device{
		"dev-nas": {
			ID: "dev-nas", Name: "nas", Names: map[string]projections.Name{"dns": {Name: "nas.lan", LastConfirmed: t0.In(cest)}},
			Group: ptr("lab"), Presence: projections.PresenceOnline, Watched: true,
			FirstSeen: t0.In(cest), LastSeen: t0.Add(time.Hour).In(cest),
			MAC: ptr("00:11:32:aa:bb:cc"), Vendor: ptr("Synology Incorporated"),
			Addresses:  []projections.Address{{IP: "192.168.1.10", Network: "192.168.1.0/24", FirstSeen: t0.In(cest), LastSeen: t0}},
			Ports:      []projections.Port{{Port: 443, Proto: "tcp", Service: "https", FirstSeen: t0, LastSeen: t0}},
			Services:   []projections.Service{{Instance: "nas", Type: "_smb._tcp", Port: 445}},
			Sources:    []string{"sweep:host", "routerapi:core"},
			AttachedTo: &projections.Attachment{DeviceID: ptr("dev-switch"), Source: "routerapi:core", Peer: "core", Port: "ether3"},
			Evidence: map[string]projections.Evidence{"mac": {Source: "routerapi:core", Time: t0},
				"label": {Source: "api", Actor: "ansible", Time: t0.In(cest)}},
			UPnP: &projections.UPnP{FriendlyName: "DiskStation", Manufacturer: "Synology", ModelName: "DS920+"},
		},
		"dev-phone": {
			// A device with nil collections: the API must answer [] and {}.
			ID: "dev-phone", Name: "phone", Presence: projections.PresenceOffline,
			FirstSeen: t0, LastSeen: t0, MAC: ptr("da:a1:19:00:00:01"), MACRandom: true,
		},
		"dev-switch": {
			ID: "dev-switch", Name: "switch", Presence: projections.PresenceQuiet, Watched: true,
			FirstSeen: t0, LastSeen: t0, Label: ptr("core switch"), Ignored: true,
			Addresses: []projections.Address{{IP: "192.168.1.2", Network: "192.168.1.0/24", FirstSeen: t0, LastSeen: t0, RetiredAt: ptr(t0.In(cest))}},
		},
	}
}

// fakeInventory holds a few devices, change-log entries and scans. fail
// makes every method return an internal error, panic makes it panic.
type fakeInventory struct {
	mu      sync.Mutex
	devices map[string]projections.Device
	fail    bool
	panic   bool

	deviceFilter projections.DeviceFilter
	eventFilter  projections.EventFilter
	scanFilter   projections.ScanFilter
	// ats are the instants the history methods were asked (diff_test.go).
	ats []time.Time
}

func newFakeInventory() *fakeInventory {
	return &fakeInventory{devices: fixtureDevices()}
}

func (f *fakeInventory) check() error {
	if f.panic {
		panic(errInternalSecret)
	}
	if f.fail {
		return errInternalSecret
	}
	return nil
}

// page cuts items to limit: the cursor "c1" is the only one issued.
func page[T any](items []T, limit int, cursor string) (projections.Page[T], error) {
	start := 0
	switch cursor {
	case "":
	case "c1":
		start = 1
	default:
		return projections.Page[T]{}, projections.ErrBadCursor
	}
	items = items[min(start, len(items)):]
	p := projections.Page[T]{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		p.NextCursor = ptr("c1")
	}
	return p, nil
}

func (f *fakeInventory) ListDevices(_ context.Context, flt projections.DeviceFilter) (projections.Page[projections.Device], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return projections.Page[projections.Device]{}, err
	}
	f.deviceFilter = flt
	var ds []projections.Device
	for _, d := range f.devices {
		if flt.Q == "" || strings.Contains(d.Name, flt.Q) {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b projections.Device) int { return strings.Compare(a.ID, b.ID) })
	return page(ds, flt.Limit, flt.Cursor)
}

func (f *fakeInventory) Device(_ context.Context, id string) (projections.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return projections.Device{}, err
	}
	d, ok := f.devices[id]
	if !ok {
		return d, projections.ErrNotFound
	}
	return d, nil
}

func (f *fakeInventory) Groups(context.Context) ([]projections.Group, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	return []projections.Group{{Name: "servers", Devices: 4}, {Name: "lab", Devices: 1}, {Name: "iot", Devices: 7}}, nil
}

func (f *fakeInventory) Stats(context.Context) (projections.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return projections.Stats{}, err
	}
	d := f.devices["dev-nas"]
	return projections.Stats{Devices: len(f.devices), ByPresence: map[string]int{"online": 1, "offline": 1, "quiet": 1},
		ByGroup: map[string]int{"lab": 1}, Watched: 2, Ignored: 1, NewestDevice: &d}, nil
}

func (f *fakeInventory) ListEvents(_ context.Context, flt projections.EventFilter) (projections.Page[projections.ChangeEntry], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return projections.Page[projections.ChangeEntry]{}, err
	}
	f.eventFilter = flt
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, cest)
	entries := []projections.ChangeEntry{
		{ID: "e2", Seq: 12, Time: t0.Add(time.Minute), Kind: projections.ChangeEdited, DeviceID: "dev-nas", Source: "api", Actor: "ansible",
			Summary: "nas was labelled", Data: &projections.OldNew{Old: nil, New: "storage"}},
		{ID: "e1", Seq: 3, Time: t0, Kind: projections.ChangeDiscovered, DeviceID: "dev-nas", Source: "sweep:host", Actor: "sweep:host", Summary: "nas was discovered"},
	}
	return page(entries, flt.Limit, flt.Cursor)
}

func (f *fakeInventory) ListScans(_ context.Context, flt projections.ScanFilter) (projections.Page[projections.Scan], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return projections.Page[projections.Scan]{}, err
	}
	f.scanFilter = flt
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	scans := []projections.Scan{
		{ID: "s2", Source: "sweep:host", Kind: "devices", Started: t0, Finished: t0.Add(3 * time.Second), DurationMS: 3000,
			Networks: []string{"192.168.1.0/24"}, ProbesSent: 508, HostsFound: 12, Complete: true},
		{ID: "s1", Source: "ports:host", Kind: "ports", Started: t0.In(cest), Finished: t0.In(cest), Complete: false, Errors: []string{"connection table full"}},
	}
	return page(scans, flt.Limit, flt.Cursor)
}

// fakeCommander applies edits to the fake inventory, as the real one
// applies them to the projections, and records what it was asked.
type fakeCommander struct {
	inv *fakeInventory

	mu      sync.Mutex
	actor   string
	edit    *command.DeviceEdit
	watched *bool
	fail    bool
	failErr error // returned instead of errInternalSecret when set
	calls   int
}

// editCount is how many edits and watch changes reached the commander.
func (c *fakeCommander) editCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *fakeCommander) EditDevice(_ context.Context, actor, id string, e command.DeviceEdit) (projections.Device, error) {
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
	d, ok := c.inv.devices[id]
	if !ok {
		return d, projections.ErrNotFound
	}
	c.actor, c.edit = actor, &e
	set := func(dst **string, v *string) {
		if v != nil {
			*dst = ptr(*v)
		}
	}
	set(&d.Label, e.Label)
	set(&d.Group, e.Group)
	set(&d.Type, e.Type)
	set(&d.Notes, e.Notes)
	if e.Ignored != nil {
		d.Ignored = *e.Ignored
	}
	for _, f := range e.Clear {
		switch f {
		case "label":
			d.Label = nil
		case "group":
			d.Group = nil
		case "type":
			d.Type = nil
		case "notes":
			d.Notes = nil
		}
	}
	c.inv.devices[id] = d
	return d, nil
}

func (c *fakeCommander) SetWatch(_ context.Context, actor, id string, watched bool) (projections.WatchState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.failErr != nil {
		return projections.WatchState{}, c.failErr
	}
	if c.fail {
		return projections.WatchState{}, errInternalSecret
	}
	c.inv.mu.Lock()
	defer c.inv.mu.Unlock()
	d, ok := c.inv.devices[id]
	if !ok {
		return projections.WatchState{}, projections.ErrNotFound
	}
	c.actor, c.watched = actor, &watched
	d.Watched = watched
	c.inv.devices[id] = d
	return projections.WatchState{Watched: watched, Presence: d.Presence}, nil
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeSpace is the database's disk as a test sets it.
type fakeSpace struct {
	mu          sync.Mutex
	free, total uint64
	err         error
}

func (f *fakeSpace) DiskSpace() (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.free, f.total, f.err
}

func (f *fakeSpace) set(free, total uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free, f.total, f.err = free, total, err
}
