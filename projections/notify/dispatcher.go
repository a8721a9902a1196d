package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sync/errgroup"

	"github.com/jocasta/jocasta/projections"
)

// Feed is the inventory as the dispatcher reads it
// (projections/inventory.Inventory).
type Feed interface {
	ChangesAfter(ctx context.Context, after uint64, limit int) ([]projections.ChangeEntry, uint64, error)
	Device(ctx context.Context, id string) (projections.Device, error)
}

// RuleSource gives a destination's rules (the Rules projection).
type RuleSource interface {
	RuleSet(destination string) (RuleSet, bool)
}

// Defaults of Options.
const (
	DefaultRetryFor     = 24 * time.Hour
	DefaultBackoffMin   = 5 * time.Second
	DefaultBackoffMax   = 30 * time.Minute
	DefaultDigestOver   = 20
	DefaultDigestWindow = time.Minute
	DefaultDigestWait   = 3 * time.Second
	DefaultPoll         = time.Second
	DefaultKeep         = 10000
)

// Options configures a Dispatcher. DB, Head, WaitFor, Feed and Rules are
// required.
type Options struct {
	// DB is the database file (store.DB()); the dispatcher keeps its
	// buckets there.
	DB *bolt.DB
	// Update, when set, runs the dispatcher's write transactions in DB
	// (store.Update, so that a failed commit fails the store as a failed
	// append does); default DB.Update.
	Update func(func(*bolt.Tx) error) error
	// Head is the seq of the last event in the log (store.Head).
	Head func() uint64
	// WaitFor returns once the projections have applied seq
	// (runner.WaitFor).
	WaitFor func(ctx context.Context, seq uint64) error
	Feed    Feed
	Rules   RuleSource
	// Destinations are the configured destinations; disabled ones
	// are listed but never sent to.
	Destinations []Destination
	// Client sends the requests; default a client that follows no
	// redirect (a 3xx is an answer, given up like a 4xx) and keeps
	// sendParallel idle connections per host.
	Client *http.Client
	// LinkBase, when set, is the web interface's URL: push messages
	// link to the device there.
	LinkBase string
	Log      *slog.Logger
	Now      func() time.Time

	// RetryFor is how long a failing change is retried (24h);
	// BackoffMin and BackoffMax bound the exponential backoff.
	RetryFor, BackoffMin, BackoffMax time.Duration
	// A push or http destination gets one digest instead of single
	// messages once more than DigestOver changes arrive within
	// DigestWindow; a digest waits DigestWait for more changes of the burst.
	DigestOver               int
	DigestWindow, DigestWait time.Duration
	// Poll is how often the log is looked at without a doorbell.
	Poll time.Duration
	// Keep is how many sent and filtered records a destination's ledger
	// keeps (the oldest go first); pending and dead ones are always kept.
	Keep int
	// Observe, when set, is told of every delivery attempt's outcome:
	// "sent", "retry" (failed, to be tried again) or "dead" (given up).
	Observe func(destination, outcome string)
}

func (o *Options) setDefaults() {
	if o.Update == nil {
		o.Update = o.DB.Update
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.RetryFor, DefaultRetryFor)
	set(&o.BackoffMin, DefaultBackoffMin)
	set(&o.BackoffMax, DefaultBackoffMax)
	set(&o.DigestWindow, DefaultDigestWindow)
	set(&o.DigestWait, DefaultDigestWait)
	set(&o.Poll, DefaultPoll)
	if o.DigestOver <= 0 {
		o.DigestOver = DefaultDigestOver
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		// Keep as many idle connections per host as a sender has
		// requests in flight: with the default two, most requests of a
		// busy destination dialed a new connection (and left one in
		// TIME_WAIT).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = sendParallel
		o.Client = &http.Client{Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
}

// Dispatcher is the notification reactor: it follows the change feed
// from its own checkpoint, records each change's decision for every
// destination in the ledger, and delivers the selected ones.
type Dispatcher struct {
	o      Options
	dests  []*Destination
	byName map[string]*Destination
	bell   chan struct{}

	mu      sync.Mutex
	senders map[string]chan struct{} // wakes a destination's sender

	decided int // batches decided, to trim the ledgers now and then

	ledger *committer // the ledger's group commit, while Run runs

	outboxReads atomic.Uint64 // rounds that read an outbox (OutboxReads)
}

// OutboxReads says how many times the senders read their outbox for due
// records: about once per round of sending, and once per DigestWait
// while a digest gathers a burst.
func (d *Dispatcher) OutboxReads() uint64 { return d.outboxReads.Load() }

// CommitStats says how many ledger transactions the running dispatcher
// committed and how many writes (decided batches, sent batches) they
// carried: writes/commits is how well the group commit gathers them.
func (d *Dispatcher) CommitStats() (commits, writes uint64) {
	d.mu.Lock()
	c := d.ledger
	d.mu.Unlock()
	if c == nil {
		return 0, 0
	}
	return c.commits.Load(), c.writes.Load()
}

// New checks the options and the destinations.
func New(o Options) (*Dispatcher, error) {
	if o.DB == nil || o.Head == nil || o.WaitFor == nil || o.Feed == nil || o.Rules == nil {
		return nil, errors.New("notify: DB, Head, WaitFor, Feed and Rules are required")
	}
	o.setDefaults()
	d := &Dispatcher{o: o, byName: map[string]*Destination{}, bell: make(chan struct{}, 1), senders: map[string]chan struct{}{}}
	var errs []error
	for _, dest := range o.Destinations {
		dest := dest
		if err := dest.prepare(); err != nil {
			if dest.Enabled {
				errs = append(errs, err)
			}
			continue
		}
		d.dests = append(d.dests, &dest)
		d.byName[dest.Name] = &dest
	}
	slices.SortFunc(d.dests, func(a, b *Destination) int { return cmpString(a.Name, b.Name) })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Destinations lists the configured destinations by name.
func (d *Dispatcher) Destinations() []*Destination { return d.dests }

// Destination returns the destination called name.
func (d *Dispatcher) Destination(name string) (*Destination, bool) {
	x, ok := d.byName[name]
	return x, ok
}

// DB is the database the ledger is in.
func (d *Dispatcher) DB() *bolt.DB { return d.o.DB }

// Notify rings the doorbell: the log may have moved. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.bell <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) wake(name string) {
	d.mu.Lock()
	ch := d.senders[name]
	d.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Redeliver re-queues destination's dead records (see the package
// function) and wakes its sender.
func (d *Dispatcher) Redeliver(destination, id string) (int, error) {
	dest, ok := d.byName[destination]
	if !ok {
		return 0, fmt.Errorf("notify: %q: %w", destination, errNoDestination)
	}
	if !dest.Enabled {
		// No sender runs for it: the records would wait forever.
		return 0, fmt.Errorf("notify: %q: %w", destination, ErrDisabled)
	}
	n, err := Redeliver(d.o.Update, destination, id, d.o.Now())
	if err == nil {
		d.wake(destination)
	}
	return n, err
}

// Run follows the feed and delivers until ctx ends. On its first run
// (no checkpoint) it starts at the log's head: changes from before are
// never sent.
func (d *Dispatcher) Run(ctx context.Context) error {
	var cp uint64
	err := d.o.Update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		var ok bool
		if cp, ok = checkpointOf(tx); !ok {
			cp = d.o.Head()
			return putCheckpoint(tx, cp)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("notify: start: %w", err)
	}
	d.o.Log.Info("notifications: dispatcher started", "checkpoint", cp, "destinations", len(d.dests))
	// The committer outlives the senders and the decider: what they
	// write while stopping still lands.
	c := newCommitter(d.o.Update)
	d.mu.Lock()
	d.ledger = c
	d.mu.Unlock()
	committed := make(chan struct{})
	go func() { defer close(committed); c.run() }()
	defer func() { c.close(); <-committed }()
	g, gctx := errgroup.WithContext(ctx)
	for _, dest := range d.dests {
		if !dest.Enabled {
			continue
		}
		ch := make(chan struct{}, 1)
		d.mu.Lock()
		d.senders[dest.Name] = ch
		d.mu.Unlock()
		s := &sender{d: d, dest: dest, wake: ch}
		g.Go(func() error { return s.run(gctx) })
	}
	g.Go(func() error { return d.follow(gctx, cp) })
	err = g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// follow decides every change after cp, batch by batch.
func (d *Dispatcher) follow(ctx context.Context, cp uint64) error {
	t := time.NewTimer(d.o.Poll)
	defer t.Stop()
	for {
		head := d.o.Head()
		if head > cp {
			if err := d.o.WaitFor(ctx, head); err != nil {
				return err
			}
			for cp < head {
				next, err := d.decideBatch(ctx, cp, head)
				if err != nil {
					return err
				}
				cp = next
			}
		}
		t.Reset(d.o.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-d.bell:
		case <-t.C:
		}
	}
}

// decideBatch decides the changes after cp (up to about 1000) and moves
// the checkpoint past them in the same transaction as their ledger
// records: a crash before the commit decides them again, never skips.
func (d *Dispatcher) decideBatch(ctx context.Context, cp, head uint64) (uint64, error) {
	entries, next, err := d.o.Feed.ChangesAfter(ctx, cp, 1000)
	if err != nil {
		return cp, err
	}
	if len(entries) < 1000 { // everything committed was read
		next = max(next, head)
	}
	devices := map[string]*projections.Device{}
	for _, e := range entries {
		if _, seen := devices[e.DeviceID]; seen || e.DeviceID == "" {
			continue
		}
		dev, err := d.o.Feed.Device(ctx, e.DeviceID)
		switch {
		case errors.Is(err, projections.ErrNotFound):
			devices[e.DeviceID] = nil
		case err != nil:
			return cp, err
		default:
			devices[e.DeviceID] = &dev
		}
	}
	// The records are made before the transaction: the committer may run
	// its body twice.
	now := d.o.Now().UTC()
	woke := map[string]bool{}
	type put struct {
		dest string
		key  []byte
		r    *Record
	}
	puts := make([]put, 0, len(entries)*len(d.dests))
	var pos uint32
	for i, e := range entries {
		if i > 0 && entries[i-1].Seq == e.Seq {
			pos++
		} else {
			pos = 0
		}
		key := changeKey(e.Seq, pos)
		for _, dest := range d.dests {
			if !dest.Enabled {
				continue
			}
			rs, _ := d.o.Rules.RuleSet(dest.Name)
			r := &Record{ID: e.ID, Entry: e, Queued: now, Attempts: []Attempt{}}
			if ok, why := Decide(rs.Rules, e, devices[e.DeviceID]); ok {
				r.State, r.NextAttempt = StatePending, &now
				woke[dest.Name] = true
			} else {
				r.State, r.Reason = StateFiltered, why
			}
			puts = append(puts, put{dest.Name, key, r})
		}
	}
	d.decided++
	trim := d.decided%64 == 0
	err = d.ledger.update(func(tx *bolt.Tx) error {
		for _, p := range puts {
			if err := putRecord(tx, p.dest, p.key, p.r); err != nil {
				return err
			}
		}
		if trim {
			for _, dest := range d.dests {
				if err := d.trim(tx, dest.Name); err != nil {
					return err
				}
			}
		}
		return putCheckpoint(tx, next)
	})
	if err != nil {
		return cp, fmt.Errorf("notify: record decisions after seq %d: %w", cp, err)
	}
	for name := range woke {
		d.wake(name)
	}
	return next, nil
}

// Test sends a test message to destination now, outside the ledger, and
// returns the attempt.
func (d *Dispatcher) Test(ctx context.Context, destination string) (Attempt, error) {
	dest, ok := d.byName[destination]
	if !ok {
		return Attempt{}, fmt.Errorf("notify: %q: %w", destination, errNoDestination)
	}
	if !dest.Enabled {
		return Attempt{}, fmt.Errorf("notify: %q: %w", destination, ErrDisabled)
	}
	now := d.o.Now().UTC()
	e := projections.ChangeEntry{ID: fmt.Sprintf("test-%d", now.UnixNano()), Time: now, Kind: "notify.test",
		Source: "notify", Summary: "jocasta test message: notify." + destination + " works"}
	res := dest.send(ctx, d.o.Client, message{entry: e}, d.o.LinkBase, now)
	return Attempt{Time: now, Status: res.status, LatencyMS: ms(res.latency), Error: res.err}, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sender delivers one destination's outbox.
type sender struct {
	d      *Dispatcher
	dest   *Destination
	wake   chan struct{}
	recent []time.Time // when the changes sent lately were queued
}

type due struct {
	key []byte
	r   Record
}

// run delivers due records in log order until ctx ends.
func (s *sender) run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	hold := false
	for {
		wake := s.wake
		if hold {
			// Gathering a digest: the changes that arrive meanwhile join
			// it when the timer fires. Waking for each of them read and
			// decoded the whole pending burst again, once per change (at
			// 1,000 changes/s: 1,000 reads of up to 1,000 records a
			// second).
			wake = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-t.C:
		}
		wait, gathering, err := s.round(ctx)
		hold = gathering && err == nil
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.d.o.Log.Error("notifications: delivery round failed", "destination", s.dest.Name, "err", err)
			wait = s.d.o.Poll
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// round sends what is due and says how long to wait for the next, and
// whether it is gathering a digest until then (new changes need not wake
// it).
func (s *sender) round(ctx context.Context) (time.Duration, bool, error) {
	for {
		now := s.d.o.Now()
		batch, nextDue, err := s.due(now, maxDigest)
		if err != nil {
			return 0, false, err
		}
		if len(batch) == 0 {
			if nextDue.IsZero() {
				return time.Hour, false, nil
			}
			return max(time.Millisecond, nextDue.Sub(now)), false, nil
		}
		if s.dest.Channel() != ChannelWebhook && (s.burst(now, len(batch)) || retriedDigest(batch)) {
			// Gather the burst for DigestWait after its oldest change.
			if wait := batch[0].r.Queued.Add(s.d.o.DigestWait).Sub(now); wait > 0 && len(batch) < maxDigest {
				return wait, true, nil
			}
			// A lone change after the wait goes out on its own (below):
			// a digest of one says less than the change.
			if len(batch) > 1 {
				if err := s.digest(ctx, batch); err != nil {
					return 0, false, err
				}
				continue
			}
		}
		// Not a burst: each change on its own, sendChunk at a time, the
		// attempts recorded after each chunk. (A push or http batch of
		// more than DigestOver is always a burst, so the whole batch is
		// sent before it is read again.)
		for len(batch) > 0 {
			n := min(len(batch), sendChunk)
			if err := s.single(ctx, batch[:n]); err != nil {
				return 0, false, err
			}
			if ctx.Err() != nil {
				return 0, false, ctx.Err()
			}
			batch = batch[n:]
		}
	}
}

// maxDigest is the most changes one round reads, and so the most one
// digest holds.
const maxDigest = 1000

// sendChunk is how many single messages are sent before their attempts
// are written to the ledger.
const sendChunk = 100

// burst reports whether n more changes make more than DigestOver within
// DigestWindow: many due at once (a sweep's new devices), or a trickle
// of changes one by one (one event each) past DigestOver in the window.
func (s *sender) burst(now time.Time, n int) bool {
	cut := now.Add(-s.d.o.DigestWindow)
	i := 0
	for i < len(s.recent) && s.recent[i].Before(cut) {
		i++
	}
	s.recent = s.recent[i:]
	return len(s.recent)+n > s.d.o.DigestOver
}

// due reads up to max pending records whose time has come, in log
// order, and the earliest time of those not due yet.
func (s *sender) due(now time.Time, limit int) ([]due, time.Time, error) {
	var out []due
	var next time.Time
	s.d.outboxReads.Add(1)
	err := s.d.o.DB.View(func(tx *bolt.Tx) error {
		ob, _ := nested(tx, BucketOutbox, s.dest.Name)
		lb, _ := nested(tx, BucketLedger, s.dest.Name)
		if ob == nil || lb == nil {
			return nil
		}
		c := ob.Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			if at, ok := dueAt(v); ok && at > now.UnixNano() {
				if t := time.Unix(0, at); next.IsZero() || t.Before(next) {
					next = t
				}
				continue
			}
			var r Record
			if err := json.Unmarshal(lb.Get(k), &r); err != nil {
				return fmt.Errorf("record %x: %w", k, err)
			}
			if r.NextAttempt != nil && r.NextAttempt.After(now) {
				if next.IsZero() || r.NextAttempt.Before(next) {
					next = *r.NextAttempt
				}
				continue
			}
			out = append(out, due{append([]byte(nil), k...), r})
		}
		return nil
	})
	return out, next, err
}

// single sends each record on its own, up to sendParallel at a time,
// then records the attempts in one transaction. A crash before it commits
// sends them again (same id).
func (s *sender) single(ctx context.Context, batch []due) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, sendParallel)
	stopped := make([]bool, len(batch))
	for i := range batch {
		if ctx.Err() != nil {
			stopped[i] = true
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(b *due, i int) {
			defer func() { <-sem; wg.Done() }()
			m := message{entry: b.r.Entry}
			if id := b.r.Entry.DeviceID; id != "" {
				if dev, err := s.d.o.Feed.Device(ctx, id); err == nil {
					m.device = &dev
				}
			}
			now := s.d.o.Now()
			res := s.dest.send(ctx, s.d.o.Client, m, s.d.o.LinkBase, now)
			if ctx.Err() != nil { // stopping: not an attempt; sent again at start
				stopped[i] = true
				return
			}
			s.settle(&b.r, res, now)
		}(&batch[i], i)
	}
	wg.Wait()
	done := batch[:0:0]
	for i := range batch {
		if stopped[i] {
			continue
		}
		done = append(done, batch[i])
		if batch[i].r.State == StateSent {
			s.recent = append(s.recent, batch[i].r.Queued)
		}
	}
	return s.store(done)
}

// maxAttemptsKept is how many attempts a ledger record keeps: more than
// 24 hours of retries take with the default backoff (5 s doubling to
// 30 min, jittered to half: at most about 110), so a record keeps every
// attempt of its retry window; past it (re-deliveries) the first and the
// latest are kept and Record.AttemptsOmitted counts the others.
const maxAttemptsKept = 256

// sendParallel is how many requests one destination has in flight.
const sendParallel = 8

// digest sends the whole batch as one message.
func (s *sender) digest(ctx context.Context, batch []due) error {
	changes := make([]projections.ChangeEntry, len(batch))
	for i, b := range batch {
		changes[i] = b.r.Entry
	}
	now := s.d.o.Now()
	first := changes[0]
	m := message{changes: changes, entry: projections.ChangeEntry{ID: "digest-" + first.ID, Seq: first.Seq,
		Time: now.UTC(), Kind: KindDigest, Source: "notify", Summary: digestText(changes)}}
	res := s.dest.send(ctx, s.d.o.Client, m, s.d.o.LinkBase, now)
	if err := ctx.Err(); err != nil {
		// Stopping: not an attempt; sent again at start. The error ends
		// the round (nil would make it read the same burst again, and
		// again, without ever returning to see the context).
		return err
	}
	// One message, one outcome: the records are retried together (one
	// backoff, not one drawn for each, which would spread the burst out
	// into single messages) and the failure is logged once.
	var next *time.Time
	for i := range batch {
		r := &batch[i].r
		r.Digest = true
		s.settleQuiet(r, res, now)
		if r.NextAttempt != nil {
			if next == nil {
				next = r.NextAttempt
			}
			r.NextAttempt = next
		}
		s.recent = append(s.recent, r.Queued)
	}
	if !res.ok() {
		s.d.o.Log.Warn("notifications: delivery failed", "destination", s.dest.Name, "channel", s.dest.Channel(),
			"id", m.entry.ID, "changes", len(batch), "status", res.status, "err", res.err)
	}
	return s.store(batch)
}

// retriedDigest reports whether batch holds more than one change that
// went out in a digest before: a digest that failed is retried as one.
func retriedDigest(batch []due) bool {
	n := 0
	for i := range batch {
		if batch[i].r.Digest && len(batch[i].r.Attempts) > 0 {
			if n++; n > 1 {
				return true
			}
		}
	}
	return false
}

// settle records an attempt on r and moves its state, and logs a
// failure.
func (s *sender) settle(r *Record, res result, now time.Time) {
	s.settleQuiet(r, res, now)
	if !res.ok() {
		s.d.o.Log.Warn("notifications: delivery failed", "destination", s.dest.Name, "channel", s.dest.Channel(),
			"id", r.ID, "status", res.status, "err", res.err, "state", r.State, "attempts", len(r.Attempts))
	}
}

// settleQuiet is settle without the log line.
func (s *sender) settleQuiet(r *Record, res result, now time.Time) {
	o := s.d.o
	t := now.UTC()
	r.Attempts = append(r.Attempts, Attempt{Time: t, Status: res.status, LatencyMS: ms(res.latency), Error: res.err})
	if len(r.Attempts) > maxAttemptsKept { // keep the first and the latest, and count the rest
		drop := len(r.Attempts) - maxAttemptsKept
		r.Attempts = append(r.Attempts[:1], r.Attempts[1+drop:]...)
		r.AttemptsOmitted += drop
	}
	if r.RetryFrom == nil {
		r.RetryFrom = &t
	}
	if o.Observe != nil {
		defer func() {
			outcome := "retry"
			switch r.State {
			case StateSent:
				outcome = "sent"
			case StateDead:
				outcome = "dead"
			}
			o.Observe(s.dest.Name, outcome)
		}()
	}
	switch {
	case res.ok():
		r.State, r.NextAttempt, r.Reason = StateSent, nil, ""
		return
	case !res.retryable:
		r.State, r.NextAttempt, r.Reason = StateDead, nil, res.err
	case t.Sub(*r.RetryFrom) >= o.RetryFor:
		r.State, r.NextAttempt = StateDead, nil
		r.Reason = fmt.Sprintf("still failing after %s: %s", o.RetryFor, res.err)
	default:
		n := 0
		for i := len(r.Attempts) - 1; i >= 0 && r.Attempts[i].Time.After(r.RetryFrom.Add(-time.Nanosecond)); i-- {
			n++
		}
		wait := o.BackoffMin << min(n-1, 30)
		if wait > o.BackoffMax || wait <= 0 {
			wait = o.BackoffMax
		}
		wait = wait/2 + rand.N(wait/2+1) // jitter: ½ to 1 times
		wait = max(wait, res.retryAfter)
		next := t.Add(wait)
		r.NextAttempt = &next
	}
}

// store writes the records' new states and trims the ledger.
func (s *sender) store(batch []due) error {
	if len(batch) == 0 {
		return nil
	}
	return s.d.ledger.update(func(tx *bolt.Tx) error {
		for i := range batch {
			if err := putRecord(tx, s.dest.Name, batch[i].key, &batch[i].r); err != nil {
				return err
			}
		}
		return nil
	})
}

// trim removes the oldest sent and filtered records past Keep.
func (d *Dispatcher) trim(tx *bolt.Tx, destination string) error {
	lb, err := nested(tx, BucketLedger, destination)
	if err != nil {
		return err
	}
	excess := lb.Stats().KeyN - d.o.Keep
	if excess <= 0 {
		return nil
	}
	c := lb.Cursor()
	var drop [][]byte
	for k, v := c.First(); k != nil && len(drop) < excess; k, v = c.Next() {
		var r struct {
			State string `json:"state"`
		}
		if json.Unmarshal(v, &r) == nil && (r.State == StateSent || r.State == StateFiltered) {
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		if err := lb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
