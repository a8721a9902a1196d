package main

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sync/errgroup"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

// jocasta whatif replays the kept history twice, side by side, into two
// temporary inventories that never touch the live database: once as it
// was recorded, under the rules recorded in the log's inventory.rules_set
// events (the configured ones before the first: what did happen; a replay
// reproduces presence exactly, clock ticks included), and once under the
// rules asked for throughout (what would have happened;
// inventory.Options.FixedRules). The recorded clock.ticked
// events encode the configured window's deadlines, so the second replay
// drops them and ticks where the presence clock (projections/presence)
// would have under the other window: between two events it asks its
// inventory for NextPresenceDeadline and, while that deadline plus the
// clock's slack comes before the next event, applies a clock.ticked at
// it. Both count the presence and address changes of their change logs
// in [since, until], and which of them each notification destination
// would receive under its current rules (notify.Decide, with the device
// as the replay has it after the batch, as the dispatcher decides with
// the device as it is then).
//
// Both start from the same state: the empty inventory when the log is
// whole and no --since is given (or the newest snapshot before --since
// is too old to matter), else the newest snapshot at or before --since
// that the log continues; events from there to --since bring both up to
// date without being counted (the what-if replay already follows its own
// rules there). Ticks the what-if replay adds get seqs far above the
// log's (whatifTickBase), so that their change-log entries never collide
// with those of the events around them.

// whatifReq asks for a what-if replay.
type whatifReq struct {
	// OnlineWindow and AddressGrace are the rules to try.
	OnlineWindow time.Duration `json:"online_window"`
	AddressGrace time.Duration `json:"address_grace"`
	// CurrentOnlineWindow and CurrentAddressGrace are the configured
	// rules, under which the history is replayed as recorded.
	CurrentOnlineWindow time.Duration `json:"current_online_window"`
	CurrentAddressGrace time.Duration `json:"current_address_grace"`
	// Since and Until bound what is counted (zero: the whole kept
	// history, up to now).
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Destinations are the enabled notification destinations.
	Destinations []string `json:"destinations"`
}

// whatifRules are presence and identity rules, as durations in words.
type whatifRules struct {
	OnlineWindow string `json:"online_window"`
	AddressGrace string `json:"address_grace"`
}

// whatifCounts counts the changes of one history.
type whatifCounts struct {
	Online           int `json:"online"`
	Offline          int `json:"offline"`
	Quiet            int `json:"quiet"`
	AddressesAdded   int `json:"addresses_added"`
	AddressesRetired int `json:"addresses_retired"`
	// Notifications are the changes destinations would receive, summed
	// over the destinations.
	Notifications int `json:"notifications"`
}

// presence is the number of presence changes.
func (c whatifCounts) presence() int { return c.Online + c.Offline + c.Quiet }

func (c whatifCounts) zero() bool { return c == whatifCounts{} }

// whatifDevice is one device's changes as they did happen and as they
// would have.
type whatifDevice struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Did   whatifCounts `json:"did"`
	Would whatifCounts `json:"would"`
}

// whatifDest is one destination's notifications.
type whatifDest struct {
	Name  string `json:"name"`
	Did   int    `json:"did"`
	Would int    `json:"would"`
}

type whatifTotal struct {
	Did   whatifCounts `json:"did"`
	Would whatifCounts `json:"would"`
}

// whatifResp is the comparison.
type whatifResp struct {
	Current whatifRules `json:"current"`
	WhatIf  whatifRules `json:"whatif"`
	// Recorded, when it differs from Current, are the rules the log
	// recorded last in the range (inventory.rules_set): the "did" column
	// follows those, and a configuration edited since serve last started
	// is not in force yet.
	Recorded *whatifRules `json:"recorded,omitempty"`
	// Since and Until are the counted interval; Since is null for the
	// start of the kept history.
	Since *time.Time `json:"since"`
	Until time.Time  `json:"until"`
	// StartedFrom says where both replays started: "the first event" or
	// the snapshot's seq and time.
	StartedFrom string `json:"started_from"`
	// FromSeq and ToSeq are the events replayed.
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	Events  int    `json:"events"`
	// RecordedTicks are the clock ticks the what-if replay dropped,
	// SimulatedTicks the ones it applied instead.
	RecordedTicks  int            `json:"recorded_ticks"`
	SimulatedTicks int            `json:"simulated_ticks"`
	Total          whatifTotal    `json:"total"`
	Devices        []whatifDevice `json:"devices"`
	Destinations   []whatifDest   `json:"destinations"`
}

// whatiffer runs what-if replays: the database itself (core), or a
// running serve over its control socket.
type whatiffer interface {
	WhatIf(ctx context.Context, req whatifReq) (whatifResp, error)
}

// WhatIf asks serve.
func (s *socketAdmin) WhatIf(ctx context.Context, req whatifReq) (whatifResp, error) {
	return call[whatifResp](ctx, s, "whatif", req)
}

// whatifOp is the control socket's whatif.
func whatifOp(a admin) func(context.Context, whatifReq) (whatifResp, error) {
	return func(ctx context.Context, req whatifReq) (whatifResp, error) {
		w, ok := a.(whatiffer)
		if !ok {
			return whatifResp{}, errors.New("whatif: not available")
		}
		return w.WhatIf(ctx, req)
	}
}

// WhatIf replays the history under req's rules beside the history as
// recorded, in temporary files removed before it returns.
func (c *core) WhatIf(ctx context.Context, req whatifReq) (whatifResp, error) {
	if req.OnlineWindow <= 0 || req.AddressGrace <= 0 || req.CurrentOnlineWindow <= 0 || req.CurrentAddressGrace <= 0 {
		return whatifResp{}, userErrorf("whatif: the online window and the address grace must be positive")
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && !req.Since.Before(req.Until) {
		return whatifResp{}, userErrorf("whatif: --since %s is not before --until %s", fmtTime(&req.Since), fmtTime(&req.Until))
	}
	end := req.Until
	if end.IsZero() {
		end = c.now().UTC()
		if !req.Since.IsZero() && !req.Since.Before(end) {
			return whatifResp{}, userErrorf("whatif: --since %s is not in the past: give an earlier time", fmtTime(&req.Since))
		}
	}
	w := &whatif{st: c.st, req: req, end: end, progress: c.progress}
	return w.run(ctx)
}

// whatifTickBase is the first seq of the what-if replay's own ticks:
// above any log's seqs, so that their change-log entries have keys of
// their own.
const whatifTickBase = 1 << 56

// whatifSlack is how long after a deadline the presence clock ticks
// (presence.Clock's default Slack).
const whatifSlack = time.Second

// whatifChunk is how many events are read at once, and whatifBatch how
// many are applied in one transaction of a replay.
const (
	whatifChunk = 4096
	whatifBatch = 1024
)

type whatif struct {
	st       *store.Store
	req      whatifReq
	end      time.Time
	progress func(format string, args ...any)
}

func (w *whatif) run(ctx context.Context) (resp whatifResp, err error) {
	req := w.req
	snap, startedFrom, err := whatifStart(w.st, req.Since)
	if err != nil {
		return resp, err
	}
	rules := notify.NewRules()
	if err := w.st.DB().View(func(tx *bolt.Tx) error { return rules.Load(tx) }); err != nil {
		return resp, fmt.Errorf("whatif: read the notification rules: %w", err)
	}
	dir, err := os.MkdirTemp("", "jocasta-whatif-")
	if err != nil {
		return resp, fmt.Errorf("whatif: %w", err)
	}
	defer os.RemoveAll(dir)

	from := w.st.First()
	if snap != nil {
		from = snap.Seq + 1
	}
	head := w.st.Head()
	did, err := newWhatifSim(ctx, w.st, filepath.Join(dir, "did.db"), snap, req.CurrentOnlineWindow, req.CurrentAddressGrace, false)
	if err != nil {
		return resp, err
	}
	defer did.close()
	would, err := newWhatifSim(ctx, w.st, filepath.Join(dir, "would.db"), snap, req.OnlineWindow, req.AddressGrace, true)
	if err != nil {
		return resp, err
	}
	defer would.close()
	for _, s := range []*whatifSim{did, would} {
		s.since, s.until, s.rules, s.dests = req.Since, w.end, rules, req.Destinations
	}

	// One reader hands the same chunks (read only by both) to the two
	// replays, which run side by side.
	g, gctx := errgroup.WithContext(ctx)
	chans := []chan []events.Envelope{make(chan []events.Envelope, 2), make(chan []events.Envelope, 2)}
	var last atomic.Uint64
	var replayed int
	g.Go(func() error {
		defer close(chans[0])
		defer close(chans[1])
		tick := time.Now()
		for next := from; next <= head; {
			evs, _, err := w.st.ReadChunk(nil, next, int(min(head-next+1, whatifChunk)))
			if err != nil {
				return fmt.Errorf("whatif: read the log: %w", err)
			}
			if len(evs) == 0 {
				return nil
			}
			stop := false
			if k := slices.IndexFunc(evs, func(e events.Envelope) bool { return e.Time.After(w.end) }); k >= 0 {
				evs, stop = evs[:k], true
			}
			if len(evs) > 0 {
				replayed += len(evs)
				last.Store(evs[len(evs)-1].Seq)
				for _, ch := range chans {
					select {
					case ch <- evs:
					case <-gctx.Done():
						return gctx.Err()
					}
				}
				next = evs[len(evs)-1].Seq + 1
			}
			if stop {
				return nil
			}
			if w.progress != nil && time.Since(tick) >= replayProgressEvery {
				tick = time.Now()
				w.progress("whatif: %d of %d events read", next-from, head-from+1)
			}
		}
		return nil
	})
	for k, s := range []*whatifSim{did, would} {
		g.Go(func() error {
			for evs := range chans[k] {
				if err := s.apply(gctx, evs); err != nil {
					return err
				}
			}
			if gctx.Err() != nil {
				return gctx.Err()
			}
			return s.finish(gctx)
		})
	}
	if err := g.Wait(); err != nil {
		return resp, err
	}
	if err := ctx.Err(); err != nil {
		return resp, err
	}

	resp = whatifResp{
		Current:     whatifRules{shortDuration(req.CurrentOnlineWindow), shortDuration(req.CurrentAddressGrace)},
		WhatIf:      whatifRules{shortDuration(req.OnlineWindow), shortDuration(req.AddressGrace)},
		Since:       sincePtr(req.Since),
		Until:       w.end,
		StartedFrom: startedFrom,
		FromSeq:     from, ToSeq: last.Load(), Events: replayed,
		RecordedTicks: would.dropped, SimulatedTicks: int(would.ticks),
		Total:        whatifTotal{Did: did.total, Would: would.total},
		Devices:      []whatifDevice{},
		Destinations: []whatifDest{},
	}
	if rr := did.inv.Rules(); rr.Recorded {
		rec := whatifRules{shortDuration(rr.OnlineWindow), shortDuration(max(rr.AddressGrace, time.Nanosecond))}
		if rec != resp.Current {
			resp.Recorded = &rec
		}
	}
	if resp.ToSeq == 0 {
		resp.FromSeq = 0
	}
	ids := map[string]bool{}
	for id := range did.devices {
		ids[id] = true
	}
	for id := range would.devices {
		ids[id] = true
	}
	for id := range ids {
		d := whatifDevice{ID: id, Name: would.name(ctx, id)}
		if d.Name == id {
			d.Name = did.name(ctx, id)
		}
		if c := did.devices[id]; c != nil {
			d.Did = *c
		}
		if c := would.devices[id]; c != nil {
			d.Would = *c
		}
		if !d.Did.zero() || !d.Would.zero() {
			resp.Devices = append(resp.Devices, d)
		}
	}
	slices.SortFunc(resp.Devices, func(a, b whatifDevice) int {
		return cmp.Or(
			cmp.Compare(b.Did.presence(), a.Did.presence()),
			cmp.Compare(b.Would.presence(), a.Would.presence()),
			cmp.Compare(b.Did.Notifications, a.Did.Notifications),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.ID, b.ID))
	})
	for _, name := range req.Destinations {
		resp.Destinations = append(resp.Destinations, whatifDest{Name: name, Did: did.destCounts[name], Would: would.destCounts[name]})
	}
	return resp, nil
}

// whatifStart picks where both replays start: nil (the empty inventory,
// from the first event) when the log is whole and nothing better is at
// hand, else the newest snapshot of this inventory's version the kept log
// continues, taken at or before since (the oldest such when since is
// zero).
func whatifStart(st *store.Store, since time.Time) (*store.SnapshotInfo, string, error) {
	first := st.First()
	const whole = "the first event"
	infos, err := st.Snapshots()
	if err != nil {
		return nil, "", fmt.Errorf("whatif: %w", err)
	}
	var usable []store.SnapshotInfo
	for _, in := range infos {
		if in.Seq+1 >= first && in.Seq <= st.Head() && (since.IsZero() || !in.Time.After(since)) {
			usable = append(usable, in)
		}
	}
	if since.IsZero() && first <= 1 {
		return nil, whole, nil
	}
	if since.IsZero() {
		usable = usable[:min(len(usable), 1)] // the oldest: as much history as is kept
	}
	for k := len(usable) - 1; k >= 0; k-- {
		// Its versions alone; the inventory's buckets are streamed
		// into each replay's file (newWhatifSim).
		vs, err := st.LoadSnapshotBuckets(usable[k].Seq, []string{runner.BucketVersions})
		if err != nil {
			return nil, "", fmt.Errorf("whatif: %w", err)
		}
		if snapshotVersion(vs, inventory.Name) != inventory.Version {
			continue // rows this build cannot read: an older snapshot, or the log itself
		}
		snap := &usable[k]
		return snap, fmt.Sprintf("the snapshot at seq %d (%s)", snap.Seq, fmtTime(&snap.Time)), nil
	}
	if first <= 1 {
		return nil, whole, nil
	}
	for _, in := range infos {
		if in.Seq+1 >= first {
			t := in.Time.UTC().Format(time.RFC3339)
			return nil, "", userErrorf("whatif: the history before %s was compacted; use --since %s or later", t, t)
		}
	}
	return nil, "", userErrorf("whatif: the log before seq %d was compacted and no snapshot of this version covers it", first)
}

// snapshotVersion is the version of projection name's rows in snap (0:
// none recorded).
func snapshotVersion(snap *store.Snapshot, name string) int {
	for _, kv := range snap.Buckets[runner.BucketVersions] {
		if string(kv.K) == name && len(kv.V) == 8 {
			return int(binary.BigEndian.Uint64(kv.V))
		}
	}
	return 0
}

// whatifSim is one replay: an inventory over a temporary file.
type whatifSim struct {
	inv  *inventory.Inventory
	db   *bolt.DB
	path string
	// resim drops the recorded clock ticks and ticks at this inventory's
	// own deadlines instead.
	resim   bool
	ticks   uint64 // ticks applied by resim
	dropped int    // recorded ticks dropped
	lastDue time.Time

	// The change feed's positions: in the log's seqs and in the ticks'.
	origAfter, tickAfter uint64

	since, until time.Time
	rules        *notify.Rules
	dests        []string

	devices    map[string]*whatifCounts
	destCounts map[string]int
	total      whatifCounts
}

// newWhatifSim starts a replay: as recorded (resim false: the rules of
// the log's inventory.rules_set events, window and grace before the
// first), or under window and grace throughout (resim).
func newWhatifSim(ctx context.Context, st *store.Store, path string, snap *store.SnapshotInfo, window, grace time.Duration, resim bool) (*whatifSim, error) {
	inv, err := inventory.New(inventory.Options{OnlineWindow: window, AddressGrace: grace, FixedRules: resim})
	if err != nil {
		return nil, userErrorf("whatif: %v", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, NoFreelistSync: true, Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("whatif: temporary database: %w", err)
	}
	s := &whatifSim{inv: inv, db: db, path: path, resim: resim, tickAfter: whatifTickBase,
		devices: map[string]*whatifCounts{}, destCounts: map[string]int{}}
	if snap != nil {
		s.origAfter = snap.Seq
		// Streamed in parts: the inventory's rows of 90 days of 1,000
		// devices, decoded and restored in one transaction, were 1.1 GB.
		if err := st.RestoreSnapshotInto(ctx, db, snap.Seq, inv.Buckets()); err != nil {
			db.Close()
			return nil, fmt.Errorf("whatif: start the replay: %w", err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range inv.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return inv.Load(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("whatif: start the replay: %w", err)
	}
	return s, nil
}

func (s *whatifSim) close() { s.db.Close() }

// apply replays evs, in batches cut after each retention.purged (whose
// device deletions remove change-log entries: the entries before it are
// counted first), and counts the changes they made.
func (s *whatifSim) apply(ctx context.Context, evs []events.Envelope) error {
	for len(evs) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(evs), whatifBatch)
		for k, e := range evs[:n] {
			if e.Kind == events.KindRetentionPurged {
				n = k + 1
				break
			}
		}
		batch := evs[:n]
		evs = evs[n:]
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, ev := range batch {
				if s.resim {
					if ev.Kind == events.KindClockTicked {
						s.dropped++
						continue
					}
					if err := s.tickUntil(tx, ev.Time); err != nil {
						return err
					}
				}
				if err := s.inv.Apply(tx, ev); err != nil {
					return err
				}
			}
			return s.inv.Flush(tx)
		})
		if err != nil {
			return fmt.Errorf("whatif: replay: %w", err)
		}
		if err := s.collect(ctx, batch[len(batch)-1].Seq); err != nil {
			return err
		}
	}
	return nil
}

// finish ticks, for a resim, up to the end of the interval: the presence
// clock would have gone on ticking after the last event.
func (s *whatifSim) finish(ctx context.Context) error {
	if !s.resim {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := s.tickUntil(tx, s.until); err != nil {
			return err
		}
		return s.inv.Flush(tx)
	})
	if err != nil {
		return fmt.Errorf("whatif: replay: %w", err)
	}
	return s.collect(ctx, s.origAfter)
}

// tickUntil applies the ticks the presence clock would have appended
// before t: one at each deadline (plus the clock's slack) that falls at
// or before t.
func (s *whatifSim) tickUntil(tx *bolt.Tx, t time.Time) error {
	for {
		d, ok := s.inv.NextPresenceDeadline()
		if !ok {
			return nil
		}
		due := d.Add(whatifSlack)
		if due.After(t) {
			return nil
		}
		if s.ticks > 0 && due.Equal(s.lastDue) {
			// A tick at a deadline passes it; this one did not.
			return fmt.Errorf("whatif: the presence deadline %s did not move after a tick", fmtTime(&d))
		}
		ev, err := events.New(events.KindClockTicked, events.ClockTicked{At: due}, due)
		if err != nil {
			return err
		}
		s.ticks++
		ev.Seq = whatifTickBase + s.ticks
		ev.Source, ev.Actor = inventory.SourceClock, inventory.SourceClock
		if err := s.inv.Apply(tx, ev); err != nil {
			return err
		}
		s.lastDue = due
	}
}

// collect counts the change-log entries made since the last call: those
// of the log's events up to seq lastOrig, then those of the ticks.
func (s *whatifSim) collect(ctx context.Context, lastOrig uint64) error {
	var entries []projections.ChangeEntry
	read := func(after, stop uint64) (uint64, error) {
		for {
			es, _, err := s.inv.ChangesAfter(ctx, after, 1000)
			if err != nil {
				return after, fmt.Errorf("whatif: %w", err)
			}
			if len(es) == 0 {
				return after, nil
			}
			for _, e := range es {
				if e.Seq > stop {
					return after, nil
				}
				entries = append(entries, e)
				after = e.Seq
			}
		}
	}
	var err error
	if s.origAfter, err = read(s.origAfter, max(lastOrig, s.origAfter)); err != nil {
		return err
	}
	if s.tickAfter, err = read(s.tickAfter, ^uint64(0)); err != nil {
		return err
	}
	devs := map[string]*projections.Device{}
	for _, e := range entries {
		if e.Time.Before(s.since) || e.Time.After(s.until) {
			continue
		}
		var c *whatifCounts
		if e.DeviceID != "" {
			if c = s.devices[e.DeviceID]; c == nil {
				c = &whatifCounts{}
				s.devices[e.DeviceID] = c
			}
		}
		for _, cc := range []*whatifCounts{c, &s.total} {
			if cc == nil {
				continue
			}
			switch e.Kind {
			case projections.ChangeOnline:
				cc.Online++
			case projections.ChangeOffline:
				cc.Offline++
			case projections.ChangeQuiet:
				cc.Quiet++
			case projections.ChangeAddressAdded:
				cc.AddressesAdded++
			case projections.ChangeAddressRetired:
				cc.AddressesRetired++
			}
		}
		if len(s.dests) == 0 {
			continue
		}
		dev, seen := devs[e.DeviceID]
		if !seen && e.DeviceID != "" {
			if d, err := s.inv.Device(ctx, e.DeviceID); err == nil {
				dev = &d
			} else if !errors.Is(err, projections.ErrNotFound) {
				return fmt.Errorf("whatif: %w", err)
			}
			devs[e.DeviceID] = dev
		}
		for _, name := range s.dests {
			rs, _ := s.rules.RuleSet(name)
			if ok, _ := notify.Decide(rs.Rules, e, dev); ok {
				s.destCounts[name]++
				s.total.Notifications++
				if c != nil {
					c.Notifications++
				}
			}
		}
	}
	return nil
}

// name is the device's name in this replay, else its id.
func (s *whatifSim) name(ctx context.Context, id string) string {
	d, err := s.inv.Device(ctx, id)
	if err != nil || d.Name == "" {
		return id
	}
	return d.Name
}

// shortDuration writes 15m for 15m0s and 6h for 6h0m0s, and 0s for
// the nanosecond that stands for an address grace of 0s (addressGrace).
func shortDuration(d time.Duration) string {
	if d == time.Nanosecond {
		return "0s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func cmdWhatif(e *env, args []string) error {
	var cfgPath, since, until string
	var window, grace durationFlag
	var asJSON bool
	fs := newFlags("whatif", &cfgPath)
	fs.Var(&window, "online-window", "the online window to try, such as 30m (default: the configured one)")
	fs.Var(&grace, "address-grace", "the address grace to try, such as 12h or 0s (default: the configured one)")
	fs.StringVar(&since, "since", "", "count changes from this time (RFC 3339)")
	fs.StringVar(&until, "until", "", "count changes up to this time (RFC 3339)")
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("whatif", pos, 0, ""); err != nil {
		return err
	}
	if !window.set && !grace.set {
		return usagef("whatif needs --online-window D or --address-grace D (or both): the rules to try, such as --online-window 30m")
	}
	if window.set && window.d == 0 {
		// As inventory.online_window: a device is online for some time
		// after it was seen.
		return usagef("whatif: --online-window 0s: the online window must be longer than 0, such as 30m")
	}
	s, err := parseTime("since", since)
	if err != nil {
		return err
	}
	u, err := parseTime("until", until)
	if err != nil {
		return err
	}
	if !s.IsZero() && !u.IsZero() && !s.Before(u) {
		return usagef("whatif: --since %s is not before --until %s", since, until)
	}
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	req := whatifReq{OnlineWindow: window.d, AddressGrace: grace.d, Since: s, Until: u,
		CurrentOnlineWindow: time.Duration(cfg.Inventory.OnlineWindow), CurrentAddressGrace: addressGrace(cfg)}
	if req.CurrentOnlineWindow <= 0 {
		req.CurrentOnlineWindow = inventory.DefaultOnlineWindow
	}
	if req.CurrentAddressGrace <= 0 {
		req.CurrentAddressGrace = inventory.DefaultAddressGrace
	}
	if !window.set {
		req.OnlineWindow = req.CurrentOnlineWindow
	}
	switch {
	case !grace.set:
		req.AddressGrace = req.CurrentAddressGrace
	case grace.d == 0:
		// As inventory.address_grace: 0s retires an address at the first
		// complete sweep that misses it (addressGrace).
		req.AddressGrace = time.Nanosecond
	}
	for _, d := range notifyDestinations(cfg) {
		if d.Enabled {
			req.Destinations = append(req.Destinations, d.Name)
		}
	}
	return withAdmin(e, cfgPath, openReadOnly, func(a admin) error {
		w, ok := a.(whatiffer)
		if !ok {
			return errors.New("whatif: not available")
		}
		resp, err := w.WhatIf(e.ctx, req)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, resp)
		}
		printWhatif(e, resp)
		return nil
	})
}

// sincePtr is t, nil when zero (the start of the kept history).
func sincePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// printWhatif writes the comparison as text: each cell is what did
// happen → what would have.
func printWhatif(e *env, r whatifResp) {
	fmt.Fprintf(e.stdout, "what if: online window %s (now %s), address grace %s (now %s)\n",
		r.WhatIf.OnlineWindow, r.Current.OnlineWindow, r.WhatIf.AddressGrace, r.Current.AddressGrace)
	if r.Recorded != nil {
		fmt.Fprintf(e.stdout, "note: the log's rules at the end were online window %s, address grace %s (what did happen follows them); the configuration's take effect when serve next starts\n",
			r.Recorded.OnlineWindow, r.Recorded.AddressGrace)
	}
	from := "the start of the kept history"
	if r.Since != nil {
		from = fmtTime(r.Since)
	}
	fmt.Fprintf(e.stdout, "changes from %s to %s; %d events replayed (seq %d to %d) from %s; %d recorded clock ticks replaced by %d\n\n",
		from, fmtTime(&r.Until), r.Events, r.FromSeq, r.ToSeq, r.StartedFrom, r.RecordedTicks, r.SimulatedTicks)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "device\tonline\toffline\tquiet\taddresses added\taddresses retired\tnotifications\t")
	cell := func(did, would int) string {
		if did == would {
			return fmt.Sprint(did)
		}
		return fmt.Sprintf("%d → %d", did, would)
	}
	row := func(name string, d, w whatifCounts) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, cell(d.Online, w.Online), cell(d.Offline, w.Offline), cell(d.Quiet, w.Quiet),
			cell(d.AddressesAdded, w.AddressesAdded), cell(d.AddressesRetired, w.AddressesRetired), cell(d.Notifications, w.Notifications))
	}
	row("total", r.Total.Did, r.Total.Would)
	for _, d := range r.Devices {
		name := d.Name
		if name != d.ID {
			name += " (" + d.ID + ")"
		}
		row(name, d.Did, d.Would)
	}
	tw.Flush()
	if len(r.Destinations) == 0 {
		fmt.Fprintln(e.stdout, "\nno notification destination is enabled")
		return
	}
	fmt.Fprintln(e.stdout, "\nnotifications under each destination's current rules:")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, d := range r.Destinations {
		fmt.Fprintf(tw, "  %s\t%s\t\n", d.Name, cell(d.Did, d.Would))
	}
	tw.Flush()
}
