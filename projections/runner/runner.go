package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/store"
)

// Projection is a read model built from the log. The runner feeds it
// every event after its checkpoint, in order, exactly once.
type Projection interface {
	// Name is the stable consumer id: its checkpoint key. Renaming a
	// projection means consuming the whole log again.
	Name() string
	// Version of the projection's rows and rules. When it differs from
	// the version stored, the projection is rebuilt from the log.
	Version() int
	// Buckets lists the bbolt buckets the projection owns. The runner
	// creates them, drops them on a rebuild and puts them in snapshots.
	Buckets() []string
	// Apply folds one event into the projection's rows, inside the
	// runner's write transaction. It must be deterministic: it reads the
	// event and the projection's state, never the clock. An error rolls
	// the whole batch back.
	Apply(tx *bolt.Tx, ev events.Envelope) error
	// Load rebuilds the projection's in-memory state from its buckets.
	// The runner calls it at start, after a rebuild or restore, and after
	// a failed commit, so memory never stays ahead of what is stored.
	Load(tx *bolt.Tx) error
}

// Flusher is implemented by a projection that buffers row writes during
// a batch: the runner calls Flush once per batch, in the batch's
// transaction, after the last Apply and before the checkpoints move.
type Flusher interface {
	Flush(tx *bolt.Tx) error
}

// Preparer is implemented by a projection that can decode an event
// before applying it. Prepare must only read ev (it runs on other
// goroutines, ahead of the batch being applied); the runner then calls
// ApplyPrepared instead of Apply with what Prepare returned. An error
// from Prepare fails the batch at that event, as Apply's would.
type Preparer interface {
	Prepare(ev events.Envelope) (any, error)
	ApplyPrepared(tx *bolt.Tx, ev events.Envelope, prepared any) error
}

// SharedPreparer is a Preparer that can prepare events of some kinds
// from their payload decoded once for every projection that reads them
// (the inventory and the scan log both read every sweep): the runner
// decodes such an event's payload once per registry and hands the same
// value to each. The value is shared: PrepareShared must not change it,
// nor keep it past ApplyPrepared in a way that lets it change.
type SharedPreparer interface {
	Preparer
	// SharedPayload reports whether events of kind are prepared from the
	// shared payload, and the registry to decode it with.
	SharedPayload(kind string) (*events.Registry, bool)
	// PrepareShared is Prepare given payload, ev's payload as the
	// registry's Decode returns it.
	PrepareShared(ev events.Envelope, payload any) (any, error)
}

// Chunker is implemented by a projection some of whose events are too
// large to apply in one transaction (a flow window of 100,000s of rows:
// bbolt keeps every page a transaction touches in memory until it
// commits). For an event Chunked reports, the runner commits the batch
// before it, then calls ApplyChunks, which writes the event's rows in
// transactions of its own (through db, the store, so that a failed
// commit fails the store as any other does) and records in each how far it got, so that
// after a crash it resumes instead of writing rows twice; the runner
// then applies the event as any other (Apply finishes it and removes
// that record, and every checkpoint moves past it in that transaction).
// Readers may see the event's rows in part until then. ApplyChunks
// stops between two of its transactions when ctx ends (the rest is
// written after the next start).
type Chunker interface {
	Chunked(ev events.Envelope) bool
	ApplyChunks(ctx context.Context, db projections.DB, ev events.Envelope) error
}

// BucketVersions is the runner's bucket: projection name → the version
// (8-byte big-endian) whose rows its buckets hold.
const BucketVersions = "projection_versions"

// Defaults for [Options].
const (
	DefaultBatchSize     = 10000
	DefaultPollInterval  = 5 * time.Second
	DefaultSnapshotEvery = 7 * 24 * time.Hour
)

// Options configures a [Runner].
type Options struct {
	// BatchSize is the most events applied in one write transaction.
	// Default 10000.
	BatchSize int
	// PollInterval is how often the runner looks at the log when no
	// doorbell rings (a safety net: Notify is the normal path). Default 5s.
	PollInterval time.Duration
	// SnapshotEvery is the least time, in event time, between two
	// snapshots; snapshots are taken only right after a retention.purged
	// event. Default 7 days.
	SnapshotEvery time.Duration
	// Log reports rebuilds, restores, snapshots and compactions; nil
	// discards.
	Log *slog.Logger
	// OnApplied is called after every committed batch with the seq every
	// projection has reached (outside any transaction; keep it short,
	// e.g. a doorbell).
	OnApplied func(seq uint64)
}

func (o *Options) setDefaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Runner feeds the log to projections. Create it with [New]; call Run
// (or CatchUp) once.
type Runner struct {
	st    *store.Store
	projs []Projection
	opts  Options
	bell  chan struct{}

	running atomic.Bool
	inited  bool
	ready   atomic.Bool

	mu        sync.Mutex
	applied   []uint64 // checkpoint of each projection, as committed
	minSeq    uint64   // min(applied)
	startHead uint64
	advanced  chan struct{} // closed and replaced whenever minSeq moves
	stopped   chan struct{} // closed when Run returns
	stopErr   error
}

// New returns a runner of projs over st. Names must be unique and non-empty.
func New(st *store.Store, projs []Projection, opts Options) (*Runner, error) {
	opts.setDefaults()
	seen := map[string]bool{}
	for _, p := range projs {
		n := p.Name()
		if n == "" {
			return nil, errors.New("runner: a projection has an empty name")
		}
		if seen[n] {
			return nil, fmt.Errorf("runner: projection %q registered twice", n)
		}
		if p.Version() < 1 {
			return nil, fmt.Errorf("runner: projection %q: version must be ≥ 1", n)
		}
		seen[n] = true
	}
	return &Runner{
		st: st, projs: slices.Clone(projs), opts: opts,
		bell:     make(chan struct{}, 1),
		applied:  make([]uint64, len(projs)),
		advanced: make(chan struct{}),
		stopped:  make(chan struct{}),
	}, nil
}

// Notify rings the doorbell: new events may be in the log. It never
// blocks; rings coalesce. Wire it to store.OnCommit.
func (r *Runner) Notify() {
	select {
	case r.bell <- struct{}{}:
	default:
	}
}

// Ready reports whether every projection has applied the head the log
// had when Run started.
func (r *Runner) Ready() bool { return r.ready.Load() }

// Applied returns the seq every projection has reached.
func (r *Runner) Applied() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.minSeq
}

// WaitFor returns once every projection has applied seq, when ctx ends
// (ctx.Err()), or when Run has stopped (ErrStopped, with Run's error).
func (r *Runner) WaitFor(ctx context.Context, seq uint64) error {
	for {
		r.mu.Lock()
		if r.minSeq >= seq {
			r.mu.Unlock()
			return nil
		}
		adv, stopped := r.advanced, r.stopped
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-adv:
		case <-stopped:
			r.mu.Lock()
			err := r.stopErr
			r.mu.Unlock()
			if err != nil {
				return fmt.Errorf("runner: wait for seq %d: %w: %w", seq, ErrStopped, err)
			}
			return fmt.Errorf("runner: wait for seq %d: %w", seq, ErrStopped)
		}
	}
}

// Run prepares the projections (rebuilding those whose version changed),
// catches them up with the log, then keeps them caught up, waking on
// Notify or every PollInterval, until ctx ends (returning ctx.Err()) or
// a batch fails (returning its error, after reloading every projection's
// memory from what is committed). Run may be called once.
func (r *Runner) Run(ctx context.Context) (err error) {
	if !r.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer func() {
		r.mu.Lock()
		r.stopErr = err
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			r.stopErr = nil
		}
		close(r.stopped)
		r.mu.Unlock()
	}()
	r.mu.Lock()
	r.startHead = r.st.Head()
	r.mu.Unlock()
	if err := r.init(ctx); err != nil {
		return err
	}
	timer := time.NewTimer(r.opts.PollInterval)
	defer timer.Stop()
	for {
		if err := r.catchUp(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.bell:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(r.opts.PollInterval)
	}
}

// CatchUp prepares the projections and applies every event up to the
// head as it is now, then returns. Replay and tools use it instead of Run.
func (r *Runner) CatchUp(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer r.running.Store(false)
	r.mu.Lock()
	r.startHead = r.st.Head()
	r.mu.Unlock()
	if !r.inited {
		if err := r.init(ctx); err != nil {
			return err
		}
	}
	return r.catchUp(ctx)
}

// plan is what init decided for one projection.
type plan struct {
	stored  int // version in BucketVersions, 0 when none
	cp      uint64
	rebuild bool
	restore bool // start from a snapshot: the log before cp was compacted
	// migrateFrom is the version of the snapshot's rows when it is not
	// the projection's (0: the same); the projection migrates them.
	migrateFrom int
}

// init brings every projection to a state it can continue from: buckets
// exist, a projection whose version changed is dropped and starts over
// (from the newest snapshot if the log before it was compacted), the
// version is recorded, then every projection loads its memory.
func (r *Runner) init(ctx context.Context) error {
	first := r.st.First()
	plans := make([]plan, len(r.projs))
	err := r.st.DB().View(func(tx *bolt.Tx) error {
		vb := tx.Bucket([]byte(BucketVersions))
		for k, p := range r.projs {
			pl := &plans[k]
			if vb != nil {
				if v := vb.Get([]byte(p.Name())); len(v) == 8 {
					pl.stored = int(binary.BigEndian.Uint64(v))
				}
			}
			pl.cp = store.Checkpoint(tx, p.Name())
			// A version change, or rows of unknown version (a checkpoint
			// but no version), means starting over.
			if pl.stored != p.Version() && (pl.stored != 0 || pl.cp != 0) {
				pl.rebuild, pl.cp = true, 0
			}
			if pl.cp+1 < first {
				pl.restore = true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("runner: read versions: %w", err)
	}
	var snap *store.Snapshot
	if slices.ContainsFunc(plans, func(p plan) bool { return p.restore }) {
		if snap, err = r.coveringSnapshot(first); err != nil {
			return err
		}
		for k, p := range r.projs {
			if plans[k].restore {
				if plans[k].migrateFrom, err = r.checkSnapshotVersion(snap, p, first); err != nil {
					return err
				}
			}
		}
		// Streamed into the buckets in parts, before the transaction
		// below moves the checkpoints: a restore cut short is done again
		// at the next start (the checkpoint is still behind the log).
		for k, p := range r.projs {
			if plans[k].restore {
				if err := r.st.RestoreSnapshotBuckets(ctx, snap.Seq, p.Buckets()); err != nil {
					return fmt.Errorf("runner: projection %s: %w", p.Name(), err)
				}
			}
		}
	}
	err = r.st.Update(func(tx *bolt.Tx) error {
		vb, err := tx.CreateBucketIfNotExists([]byte(BucketVersions))
		if err != nil {
			return err
		}
		for k, p := range r.projs {
			pl := plans[k]
			if rp, ok := p.(Retirer); ok {
				for _, b := range rp.RetiredBuckets() {
					if tx.Bucket([]byte(b)) == nil {
						continue
					}
					if err := tx.DeleteBucket([]byte(b)); err != nil {
						return fmt.Errorf("projection %s: drop retired bucket %q: %w", p.Name(), b, err)
					}
					r.opts.Log.Info("dropped a bucket an older version of the projection owned", "projection", p.Name(), "bucket", b)
				}
			}
			if pl.rebuild {
				r.opts.Log.Info("projection version changed: rebuilding it from the log", "projection", p.Name(), "from_version", pl.stored, "to_version", p.Version())
			}
			if pl.rebuild && !pl.restore { // a restore replaced the buckets
				for _, b := range p.Buckets() {
					if tx.Bucket([]byte(b)) != nil {
						if err := tx.DeleteBucket([]byte(b)); err != nil {
							return fmt.Errorf("projection %s: drop bucket %q: %w", p.Name(), b, err)
						}
					}
				}
			}
			if pl.restore {
				pl.cp = snap.Seq
				r.opts.Log.Info("the log before the projection's checkpoint was compacted: starting from the snapshot", "projection", p.Name(), "first", first, "snapshot_seq", snap.Seq)
				if pl.migrateFrom != 0 {
					if err := p.(Migrator).Migrate(tx, pl.migrateFrom); err != nil {
						return fmt.Errorf("projection %s: migrate the snapshot's rows from version %d to %d: %w", p.Name(), pl.migrateFrom, p.Version(), err)
					}
					r.opts.Log.Info("migrated the snapshot's rows", "projection", p.Name(), "from_version", pl.migrateFrom, "to_version", p.Version())
				}
			}
			for _, b := range p.Buckets() {
				if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
					return fmt.Errorf("projection %s: create bucket %q: %w", p.Name(), b, err)
				}
			}
			var v [8]byte
			binary.BigEndian.PutUint64(v[:], uint64(p.Version()))
			if err := vb.Put([]byte(p.Name()), v[:]); err != nil {
				return err
			}
			if err := store.SetCheckpoint(tx, p.Name(), pl.cp); err != nil {
				return err
			}
			plans[k].cp = pl.cp
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("runner: prepare projections: %w", err)
	}
	if err := r.loadAll(); err != nil {
		return err
	}
	r.mu.Lock()
	for k := range r.projs {
		r.applied[k] = plans[k].cp
	}
	r.advanceLocked()
	r.mu.Unlock()
	r.inited = true
	return nil
}

// Retirer is an optional interface of a Projection: the buckets older
// versions of it owned and this one does not. The runner deletes them
// when it prepares the projection, so that a database upgraded across
// the change keeps no rows nobody reads.
type Retirer interface {
	RetiredBuckets() []string
}

// Migrator is an optional interface of a Projection: it turns rows
// written by an older version of itself into its own, in place, in tx.
// The runner calls it only when it must start the projection from a
// snapshot (the events before it were compacted) whose rows are of
// another version; without the events it cannot rebuild instead.
type Migrator interface {
	Migrate(tx *bolt.Tx, from int) error
}

// checkSnapshotVersion compares the version snap recorded for p with p's
// own. It returns 0 when they agree (or the snapshot holds nothing of p:
// a projection added after it starts empty there), the snapshot's version
// when p is a Migrator that will migrate, and an error wrapping
// ErrSnapshotVersion otherwise: restoring rows of another version
// unchecked would serve rows this build misreads.
func (r *Runner) checkSnapshotVersion(snap *store.Snapshot, p Projection, first uint64) (int, error) {
	var stored int
	for _, kv := range snap.Buckets[BucketVersions] {
		if string(kv.K) == p.Name() && len(kv.V) == 8 {
			stored = int(binary.BigEndian.Uint64(kv.V))
		}
	}
	if stored == p.Version() {
		return 0, nil
	}
	if stored == 0 {
		// snap holds the versions only: read p's buckets.
		own, err := r.st.LoadSnapshotBuckets(snap.Seq, p.Buckets())
		if err != nil {
			return 0, fmt.Errorf("runner: %w", err)
		}
		rows := 0
		for _, b := range p.Buckets() {
			rows += len(own.Buckets[b])
		}
		if rows == 0 {
			return 0, nil
		}
	}
	if _, ok := p.(Migrator); ok && stored != 0 {
		return stored, nil
	}
	return 0, fmt.Errorf("projection %s: the log before seq %d was compacted behind the snapshot at seq %d, whose rows are of version %d, and this build's %s is version %d and cannot migrate them; run the release that wrote them, or restore a backup taken before compaction and run jocasta replay: %w",
		p.Name(), first, snap.Seq, stored, p.Name(), p.Version(), ErrSnapshotVersion)
}

// coveringSnapshot loads the versions bucket of the newest snapshot a
// compacted log can continue from (Seq ≥ first-1): the projections'
// buckets are streamed from it (store.RestoreSnapshotBuckets), not
// loaded whole.
func (r *Runner) coveringSnapshot(first uint64) (*store.Snapshot, error) {
	infos, err := r.st.Snapshots()
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	for k := len(infos) - 1; k >= 0; k-- {
		if infos[k].Seq+1 >= first && infos[k].Seq <= r.st.Head() {
			snap, err := r.st.LoadSnapshotBuckets(infos[k].Seq, []string{BucketVersions})
			if err != nil {
				return nil, fmt.Errorf("runner: %w", err)
			}
			return snap, nil
		}
	}
	return nil, fmt.Errorf("runner: the log before seq %d was compacted and no snapshot covers it: %w", first, ErrNoSnapshot)
}

// loadAll has every projection load its memory from what is committed.
func (r *Runner) loadAll() error {
	err := r.st.DB().View(func(tx *bolt.Tx) error {
		var errs []error
		for _, p := range r.projs {
			if err := p.Load(tx); err != nil {
				errs = append(errs, fmt.Errorf("projection %s: load: %w", p.Name(), err))
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}

// advanceLocked recomputes minSeq and wakes waiters. r.mu is held.
func (r *Runner) advanceLocked() {
	m := uint64(0)
	for k, a := range r.applied {
		if k == 0 || a < m {
			m = a
		}
	}
	if len(r.applied) == 0 {
		m = r.st.Head()
	}
	if m != r.minSeq || !r.ready.Load() {
		r.minSeq = m
		close(r.advanced)
		r.advanced = make(chan struct{})
	}
	if m >= r.startHead {
		r.ready.Store(true)
	}
}

// batch is a run of events read from the log, with what each Preparer
// made of them (prep[k][j] for projection k and event j).
type batch struct {
	evs  []events.Envelope
	prep [][]any
	perr [][]error
	err  error
}

// catchUp applies batches until every projection is at the head. One
// goroutine reads (and prepares) the next batches while this one applies
// the current, so reading, decoding and applying overlap.
func (r *Runner) catchUp(ctx context.Context) error {
	return r.catchUpTo(ctx, math.MaxUint64)
}

// catchUpTo is catchUp that stops after seq limit.
func (r *Runner) catchUpTo(ctx context.Context, limit uint64) error {
	r.mu.Lock()
	from := r.minSeq + 1
	if len(r.projs) == 0 || from > r.st.Head() || from > limit {
		r.advanceLocked()
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()

	rctx, cancel := context.WithCancel(ctx)
	ch := make(chan *batch, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		r.read(rctx, from, limit, ch)
	}()
	defer func() {
		cancel()
		for range ch { // unblock the reader
		}
		wg.Wait()
	}()
	for b := range ch {
		if b.err != nil {
			return b.err
		}
		if err := r.applyBatch(ctx, b); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// read sends batches of events from seq from on until the end of the
// log (or ctx's end). It reads and prepares the parts of a batch on up to
// GOMAXPROCS goroutines. A batch ends early after a retention.purged that
// a snapshot is due at, so that the snapshot is taken right after it.
func (r *Runner) read(ctx context.Context, from, limit uint64, ch chan<- *batch) {
	send := func(b *batch) bool {
		select {
		case ch <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var rest *batch // what follows a retention.purged in the batch read last
	// The batch is cut only where applyBatch will snapshot: after a purge
	// when the newest snapshot is SnapshotEvery older (snapshotDue's rule;
	// the applier takes the snapshots, only at these cuts, so the reader
	// can follow its newest one). Cutting at every purge made an hourly
	// purge cost a commit and a flush of every changed row per hour. The
	// stored snapshots are read at the first purge, not at every
	// catch-up.
	var (
		newest             time.Time
		haveSnap, knowSnap bool
	)
	size := min(r.opts.BatchSize, firstBatch)
	for ctx.Err() == nil && from <= limit {
		b := rest
		if b == nil {
			n, err := r.st.Span(from, int(min(uint64(size), limit-from+1)), int64(maxBatchStored))
			if err == nil {
				b, err = r.readBatch(from, max(n, 1)) // none: readBatch says why
			}
			if err != nil {
				send(&batch{err: err})
				return
			}
			if len(b.evs) == 0 {
				return
			}
			size = nextBatchSize(b.evs, r.opts.BatchSize)
		}
		rest = nil
		for k, e := range b.evs {
			if e.Kind != events.KindRetentionPurged {
				continue
			}
			if !knowSnap {
				var err error
				if newest, haveSnap, err = r.newestSnapshot(); err != nil {
					send(&batch{err: err})
					return
				}
				knowSnap = true
			}
			if haveSnap && e.Time.Sub(newest) < r.opts.SnapshotEvery {
				continue
			}
			newest, haveSnap = e.Time, true
			if k+1 < len(b.evs) {
				// Send up to it; keep the rest, already read and prepared,
				// for the next batch (reading it again made a log with an
				// hourly purge cost batches × batch size).
				b, rest = b.split(k + 1)
			}
			break
		}
		if !send(b) {
			return
		}
		from = b.evs[len(b.evs)-1].Seq + 1
	}
}

// maxBatchBytes bounds a batch by the size of its events' payloads as
// well as by BatchSize: a sweep of 1,000 hosts written by difference is
// about 20 KB, and 10,000 of them in a batch, with what the preparers
// and the write transaction make of them, kept hundreds of MB live in
// the replay of 90 days of 1,000 devices. A batch costs several times
// its payloads in live heap (the payloads, their decoded form, the next
// batch prepared while it is applied, the write transaction's nodes): 4
// MiB halved the live peak of that replay and of serve's rebuild of the
// same log, 16 MiB's 262 MB to 130 MB (docs/performance.md, "Rebuild
// memory"). Batches of small events stay BatchSize long. The first batch
// of a read, before any size is known, is at most firstBatch events. A
// variable for tests.
var maxBatchBytes = 4 << 20

// maxBatchStored bounds a batch by its events' stored bytes, read
// before the batch is (store.Span), whatever size the events before
// suggested: a batch holds at most store.ChunkBytes (8 MiB, twice
// maxBatchBytes) but for a single event larger. Without it the first
// batch of a read (firstBatch events) and a batch after small events
// could be hundreds of flow windows of megabytes each (gigabytes at
// 10,000 devices × 1,000 peers), and a batch after large events was
// still prepareChunk events. Sweeps (20 KB) and smaller events stay
// within it at prepareChunk and BatchSize. A variable for tests.
var maxBatchStored = store.ChunkBytes

// firstBatch is the most events of the first batch of a read.
const firstBatch = 1024

// nextBatchSize is how many events the batch after evs reads: as many as
// fit maxBatchBytes at the size evs' payloads had on average, between
// prepareChunk and most (BatchSize).
func nextBatchSize(evs []events.Envelope, most int) int {
	total := 0
	for k := range evs {
		total += len(evs[k].Payload)
	}
	if total == 0 {
		return most
	}
	return int(min(int64(most), max(prepareChunk, int64(maxBatchBytes)*int64(len(evs))/int64(total))))
}

// split cuts b after its first n events: the batch of those, and the
// batch of the rest with what was prepared of them.
func (b *batch) split(n int) (head, tail *batch) {
	head = &batch{evs: b.evs[:n:n]}
	tail = &batch{evs: b.evs[n:]}
	if b.prep != nil {
		head.prep, head.perr = make([][]any, len(b.prep)), make([][]error, len(b.prep))
		tail.prep, tail.perr = make([][]any, len(b.prep)), make([][]error, len(b.prep))
		for k := range b.prep {
			if b.prep[k] != nil {
				head.prep[k], head.perr[k] = b.prep[k][:n:n], b.perr[k][:n:n]
				tail.prep[k], tail.perr[k] = b.prep[k][n:], b.perr[k][n:]
			}
		}
	}
	return head, tail
}

// truncate keeps the first n events of b and what was prepared of them.
func (b *batch) truncate(n int) {
	b.evs = b.evs[:n]
	for k := range b.prep {
		if b.prep[k] != nil {
			b.prep[k], b.perr[k] = b.prep[k][:n], b.perr[k][:n]
		}
	}
}

// prepareChunk is the least number of events worth a goroutine.
const prepareChunk = 256

// readBatch reads up to size events from seq from on and runs every
// Preparer over them. It splits the range over up to GOMAXPROCS
// goroutines, each reading its part in its own read transaction
// (decoding the stored JSON is much of the work) straight into its
// place in the batch, then preparing it. The batch ends at the first
// gap (the head moving between the reads); it is an error if the log
// does not start at from.
func (r *Runner) readBatch(from uint64, size int) (*batch, error) {
	head := r.st.Head()
	if head < from {
		return &batch{}, nil
	}
	size = int(min(uint64(size), head-from+1)) // head only grows: a lower bound
	parts := max(1, min(runtime.GOMAXPROCS(0), size/prepareChunk))
	per := (size + parts - 1) / parts
	b := r.newBatch(make([]events.Envelope, size))
	got := make([]int, parts)
	errs := make([]error, parts)
	parallel(parts, func(part int) {
		lo, hi := part*per, min((part+1)*per, size)
		evs, err := r.st.ReadAppend(b.evs[lo:lo:hi], from+uint64(lo), hi-lo)
		if len(evs) > 0 && &evs[0] != &b.evs[lo] {
			copy(b.evs[lo:hi], evs) // ReadAppend had to grow it (never with max ≤ cap)
		}
		got[part], errs[part] = len(evs), err
		r.prepareRange(b, lo, lo+len(evs))
	})
	if errs[0] != nil {
		return nil, fmt.Errorf("runner: read from %d: %w", from, errs[0])
	}
	if got[0] > 0 && b.evs[0].Seq != from {
		return nil, fmt.Errorf("runner: read from %d: the log starts at %d (compacted past a projection): %w", from, b.evs[0].Seq, ErrNoSnapshot)
	}
	// Keep the parts that continue the ones before them without a gap.
	n := got[0]
	for part := 1; part < parts && n == part*per && errs[part] == nil && got[part] > 0; part++ {
		if b.evs[n].Seq != b.evs[n-1].Seq+1 {
			break
		}
		n += got[part]
	}
	b.truncate(n)
	return b, nil
}

// newBatch returns a batch of evs with room for what every Preparer
// makes of them.
func (r *Runner) newBatch(evs []events.Envelope) *batch {
	b := &batch{evs: evs}
	for k, p := range r.projs {
		if _, ok := p.(Preparer); ok {
			if b.prep == nil {
				b.prep, b.perr = make([][]any, len(r.projs)), make([][]error, len(r.projs))
			}
			b.prep[k], b.perr[k] = make([]any, len(evs)), make([]error, len(evs))
		}
	}
	return b
}

// prepareRange runs every Preparer over b.evs[lo:hi]. An event whose
// kind SharedPreparers read has its payload decoded once per registry
// for all of them; when that decode fails, each prepares on its own (and
// reports the error in its words).
func (r *Runner) prepareRange(b *batch, lo, hi int) {
	if b.prep == nil {
		return
	}
	for j := lo; j < hi; j++ {
		ev := b.evs[j]
		var (
			shared    any
			sharedReg *events.Registry
		)
		for k, p := range r.projs {
			if b.prep[k] == nil {
				continue
			}
			if sp, ok := p.(SharedPreparer); ok {
				if reg, ok := sp.SharedPayload(ev.Kind); ok {
					if reg != sharedReg {
						shared, sharedReg = nil, reg
						if v, err := reg.Decode(ev); err == nil {
							shared = v
						}
					}
					if shared != nil {
						b.prep[k][j], b.perr[k][j] = sp.PrepareShared(ev, shared)
						continue
					}
				}
			}
			b.prep[k][j], b.perr[k][j] = p.(Preparer).Prepare(ev)
		}
	}
}

// preparedBatch is a batch of evs, prepared on up to GOMAXPROCS
// goroutines.
func (r *Runner) preparedBatch(evs []events.Envelope) *batch {
	b := r.newBatch(evs)
	n := len(evs)
	parts := max(1, min(runtime.GOMAXPROCS(0), n/prepareChunk))
	per := (n + parts - 1) / parts
	parallel(parts, func(part int) { r.prepareRange(b, part*per, min((part+1)*per, n)) })
	return b
}

// parallel runs work(0..n-1), each on its own goroutine when n > 1.
func parallel(n int, work func(part int)) {
	if n == 1 {
		work(0)
		return
	}
	var wg sync.WaitGroup
	for part := range n {
		wg.Go(func() { work(part) })
	}
	wg.Wait()
}

// applyBatch applies a batch to every projection not past it, flushes,
// and moves the checkpoints, in one write transaction: either all of it
// commits or none of it does. After a retention.purged that ends the
// batch, it snapshots every projection when the newest snapshot is older
// than SnapshotEvery.
func (r *Runner) applyBatch(ctx context.Context, b *batch) error {
	for from := 0; ; from = 1 {
		j, chunkers := r.nextChunked(b, from)
		if j < 0 {
			return r.applyWhole(b)
		}
		if j > 0 {
			var head *batch
			head, b = b.split(j)
			if err := r.applyWhole(head); err != nil {
				return err
			}
		}
		// b starts with the chunked event; it is applied with what
		// follows it, up to the next chunked one.
		for _, c := range chunkers {
			if err := c.ApplyChunks(ctx, r.st, b.evs[0]); err != nil {
				err = fmt.Errorf("runner: apply seq %d in parts: %w", b.evs[0].Seq, err)
				if ctx.Err() != nil {
					return err // shutting down: the parts went as far as they say
				}
				if lerr := r.loadAll(); lerr != nil {
					err = errors.Join(err, lerr)
				}
				return err
			}
		}
	}
}

// nextChunked returns the index, from from on, of the first event of b
// that a Chunker behind it wants applied in parts, with those Chunkers;
// -1 when there is none.
func (r *Runner) nextChunked(b *batch, from int) (int, []Chunker) {
	r.mu.Lock()
	applied := slices.Clone(r.applied)
	r.mu.Unlock()
	for j := from; j < len(b.evs); j++ {
		var out []Chunker
		for k, p := range r.projs {
			if c, ok := p.(Chunker); ok && applied[k] < b.evs[j].Seq && c.Chunked(b.evs[j]) {
				out = append(out, c)
			}
		}
		if len(out) > 0 {
			return j, out
		}
	}
	return -1, nil
}

// applyWhole applies b in one transaction with every projection's
// checkpoint (and a snapshot when one is due after its last event).
func (r *Runner) applyWhole(b *batch) error {
	evs := b.evs
	last := evs[len(evs)-1]
	snapshot := false
	if last.Kind == events.KindRetentionPurged {
		var err error
		if snapshot, err = r.snapshotDue(last.Time); err != nil {
			return err
		}
	}
	r.mu.Lock()
	applied := slices.Clone(r.applied)
	r.mu.Unlock()

	err := r.st.Update(func(tx *bolt.Tx) error {
		for j, ev := range evs {
			for k, p := range r.projs {
				if applied[k] >= ev.Seq {
					continue
				}
				var err error
				if b.prep != nil && b.prep[k] != nil {
					if err = b.perr[k][j]; err == nil {
						err = p.(Preparer).ApplyPrepared(tx, ev, b.prep[k][j])
					}
				} else {
					err = p.Apply(tx, ev)
				}
				if err != nil {
					return fmt.Errorf("projection %s: seq %d: %w", p.Name(), ev.Seq, err)
				}
			}
		}
		for k, p := range r.projs {
			if applied[k] >= last.Seq {
				continue
			}
			if f, ok := p.(Flusher); ok {
				if err := f.Flush(tx); err != nil {
					return fmt.Errorf("projection %s: flush: %w", p.Name(), err)
				}
			}
			if err := store.SetCheckpoint(tx, p.Name(), last.Seq); err != nil {
				return err
			}
		}
		if snapshot {
			if err := store.SaveSnapshotOfTx(tx, last, r.snapshotBuckets()); err != nil {
				return err
			}
			r.opts.Log.Info("snapshot of the projections", "seq", last.Seq)
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("runner: apply seq %d..%d: %w", evs[0].Seq, last.Seq, err)
		if lerr := r.loadAll(); lerr != nil {
			err = errors.Join(err, lerr)
		}
		return err
	}
	r.mu.Lock()
	for k := range r.applied {
		r.applied[k] = max(r.applied[k], last.Seq)
	}
	r.advanceLocked()
	seq := r.minSeq
	r.mu.Unlock()
	if r.opts.OnApplied != nil {
		r.opts.OnApplied(seq)
	}
	return nil
}

// snapshotBuckets lists every projection's buckets and the versions.
func (r *Runner) snapshotBuckets() []string {
	out := []string{BucketVersions}
	for _, p := range r.projs {
		out = append(out, p.Buckets()...)
	}
	return out
}

// snapshotDue reports whether the newest snapshot is older than
// SnapshotEvery at event time t (or there is none).
func (r *Runner) snapshotDue(t time.Time) (bool, error) {
	newest, ok, err := r.newestSnapshot()
	if err != nil {
		return false, err
	}
	return !ok || t.Sub(newest) >= r.opts.SnapshotEvery, nil
}

// newestSnapshot returns the time of the newest stored snapshot (false
// when there is none).
func (r *Runner) newestSnapshot() (time.Time, bool, error) {
	infos, err := r.st.Snapshots()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("runner: %w", err)
	}
	var newest time.Time
	for _, in := range infos {
		if in.Time.After(newest) {
			newest = in.Time
		}
	}
	return newest, len(infos) > 0, nil
}

// Compact removes the log behind the newest snapshot taken before
// `before` (the history cutoff), provided every projection has passed it,
// and deletes the snapshots older than that one. It returns how many
// events it removed (0 when no snapshot qualifies or the log is already
// compacted that far).
func (r *Runner) Compact(ctx context.Context, before time.Time) (int, error) {
	infos, err := r.st.Snapshots()
	if err != nil {
		return 0, fmt.Errorf("runner: compact: %w", err)
	}
	applied := r.Applied()
	var base *store.SnapshotInfo
	for k := range infos {
		in := &infos[k]
		if in.Time.Before(before) && in.Seq <= applied && (base == nil || in.Seq > base.Seq) {
			base = in
		}
	}
	if base == nil || base.Seq+1 <= r.st.First() {
		return 0, nil
	}
	n, err := r.st.Compact(ctx, base.Seq)
	if err != nil {
		return n, fmt.Errorf("runner: compact through %d: %w", base.Seq, err)
	}
	if err := r.st.DeleteSnapshotsBefore(base.Seq); err != nil {
		return n, fmt.Errorf("runner: compact: %w", err)
	}
	r.opts.Log.Info("compacted the log behind a snapshot", "events", n, "through_seq", base.Seq, "snapshot_time", base.Time.Format(time.RFC3339))
	return n, nil
}
