package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// counting is a test projection: it writes one row per event (seq →
// version that applied it) and fails if a row is already there, so an
// event applied twice is an error; it counts its Apply calls.
type counting struct {
	name    string
	version int
	// failAt makes Apply fail (once) at that seq; exitAt exits the
	// process there (crash tests).
	failAt, exitAt uint64

	mu      sync.Mutex
	applied int
	rows    int // rows seen by the last Load
	loads   int
}

func (c *counting) Name() string      { return c.name }
func (c *counting) Version() int      { return c.version }
func (c *counting) Buckets() []string { return []string{c.name + ".rows"} }

func (c *counting) Apply(tx *bolt.Tx, ev events.Envelope) error {
	b := tx.Bucket([]byte(c.name + ".rows"))
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], ev.Seq)
	if b.Get(k[:]) != nil {
		return fmt.Errorf("seq %d applied twice", ev.Seq)
	}
	if err := b.Put(k[:], []byte(strconv.Itoa(c.version))); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied++
	if ev.Seq == c.exitAt {
		os.Exit(3) // a crash after rows were written, before the commit
	}
	if ev.Seq == c.failAt {
		c.failAt = 0
		return errors.New("injected failure")
	}
	return nil
}

func (c *counting) Load(tx *bolt.Tx) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	c.rows = tx.Bucket([]byte(c.name + ".rows")).Stats().KeyN
	return nil
}

func (c *counting) stats() (applied, rows, loads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied, c.rows, c.loads
}

// rowsOf checks the stored rows of a counting projection: exactly one per
// seq 1..head, and returns the checkpoint.
func rowsOf(t *testing.T, st *store.Store, name string, head uint64) uint64 {
	t.Helper()
	var cp uint64
	err := st.DB().View(func(tx *bolt.Tx) error {
		cp = store.Checkpoint(tx, name)
		b := tx.Bucket([]byte(name + ".rows"))
		n := uint64(0)
		return b.ForEach(func(k, v []byte) error {
			n++
			if s := binary.BigEndian.Uint64(k); s != n {
				return fmt.Errorf("row %d where %d expected", s, n)
			}
			if n > cp {
				return fmt.Errorf("row %d beyond checkpoint %d", n, cp)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	_ = st.DB().View(func(tx *bolt.Tx) error { n = tx.Bucket([]byte(name + ".rows")).Stats().KeyN; return nil })
	if uint64(n) != cp {
		t.Fatalf("%s: %d rows, checkpoint %d", name, n, cp)
	}
	if cp != head {
		t.Fatalf("%s: checkpoint %d, want %d", name, cp, head)
	}
	return cp
}

func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// appendTicks appends n clock ticks a second apart from t0 + start s.
func appendTicks(t testing.TB, st *store.Store, start, n int) uint64 {
	t.Helper()
	evs := make([]events.Envelope, n)
	for k := range n {
		at := t0.Add(time.Duration(start+k) * time.Second)
		evs[k] = events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
		evs[k].Source = "clock"
	}
	out, err := st.Append(context.Background(), evs...)
	if err != nil {
		t.Fatal(err)
	}
	return out[len(out)-1].Seq
}

func TestExactlyOnceAfterFailedBatch(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	head := appendTicks(t, st, 0, 100)

	a := &counting{name: "a", version: 1, failAt: 57}
	b := &counting{name: "b", version: 1}
	r, err := New(st, []Projection{a, b}, Options{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "injected failure") || r.Ready() {
		t.Fatalf("Run = %v, ready %v; want the injected failure", err, r.Ready())
	}
	// Batches 1-50 committed; the batch with 57 rolled back for both.
	rowsOf(t, st, "a", 50)
	rowsOf(t, st, "b", 50)
	if _, rows, loads := a.stats(); loads != 2 || rows != 50 {
		t.Errorf("after the failure a reloaded %d times with %d rows, want 2 and 50", loads, rows)
	}
	if err := r.WaitFor(context.Background(), 100); !errors.Is(err, ErrStopped) {
		t.Errorf("WaitFor after the failure = %v", err)
	}

	// Restart: every event applied exactly once in total.
	a2, b2 := &counting{name: "a", version: 1}, &counting{name: "b", version: 1}
	r2, _ := New(st, []Projection{a2, b2}, Options{BatchSize: 10})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r2.Run(ctx) }()
	if err := r2.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	rowsOf(t, st, "a", head)
	rowsOf(t, st, "b", head)
	if n, _, _ := a2.stats(); n != 50 {
		t.Errorf("restart applied %d events, want 50", n)
	}
}

// TestCrashHelper is the child process of TestExactlyOnceAfterCrash.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv("JOCASTA_RUNNER_CRASH_DB")
	if path == "" {
		t.Skip("helper process for TestExactlyOnceAfterCrash")
	}
	st := openStore(t, path)
	p := &counting{name: "a", version: 1, exitAt: 57}
	r, _ := New(st, []Projection{p}, Options{BatchSize: 10})
	_ = r.CatchUp(context.Background())
	t.Fatal("the crash did not happen")
}

func TestExactlyOnceAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	st := openStore(t, path)
	head := appendTicks(t, st, 0, 100)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JOCASTA_RUNNER_CRASH_DB="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child: %v\n%s", err, out)
	}
	st = openStore(t, path)
	defer st.Close()
	rowsOf(t, st, "a", 50) // the batch being written when the process died is gone
	p := &counting{name: "a", version: 1}
	r, _ := New(st, []Projection{p}, Options{BatchSize: 10})
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	rowsOf(t, st, "a", head)
	if n, _, _ := p.stats(); n != 50 {
		t.Errorf("applied %d after the crash, want 50", n)
	}
}

func TestRebuildOnVersionChange(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	if head := appendTicks(t, st, 0, 30); head != 30 {
		t.Fatalf("head %d after 30 ticks", head)
	}
	a, b := &counting{name: "a", version: 1}, &counting{name: "b", version: 1}
	r, _ := New(st, []Projection{a, b}, Options{})
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	head := appendTicks(t, st, 30, 5)

	a2, b2 := &counting{name: "a", version: 2}, &counting{name: "b", version: 1}
	r2, _ := New(st, []Projection{a2, b2}, Options{})
	if err := r2.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := a2.stats(); n != int(head) {
		t.Errorf("a (version changed) applied %d events, want all %d", n, head)
	}
	if n, _, _ := b2.stats(); n != 5 {
		t.Errorf("b (same version) applied %d events, want the 5 new ones", n)
	}
	rowsOf(t, st, "a", head)
	rowsOf(t, st, "b", head)
	// Every row of a was written by version 2: the old rows were dropped.
	_ = st.DB().View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("a.rows")).ForEach(func(k, v []byte) error {
			if string(v) != "2" {
				t.Errorf("row %x written by version %s", k, v)
			}
			return nil
		})
	})
}

func TestReadyAndWaitFor(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	startHead := appendTicks(t, st, 0, 25)
	gate := make(chan struct{})
	slow := &gated{counting: counting{name: "a", version: 1}, gate: gate, at: 20}
	r, _ := New(st, []Projection{slow}, Options{BatchSize: 5, PollInterval: time.Hour})
	st.OnCommit(func(uint64) { r.Notify() })
	if r.Ready() {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	if err := r.WaitFor(ctx, 15); err != nil {
		t.Fatal(err)
	}
	if r.Ready() {
		t.Error("ready while behind the head seen at start")
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	if err := r.WaitFor(short, startHead); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor while blocked = %v", err)
	}
	cancelShort()
	close(gate)
	if err := r.WaitFor(ctx, startHead); err != nil {
		t.Fatal(err)
	}
	if !r.Ready() {
		t.Error("not ready after applying the head seen at start")
	}
	// New events arrive through the doorbell, not the (hour-long) poll.
	next := appendTicks(t, st, 100, 1)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := r.WaitFor(wctx, next); err != nil {
		t.Fatalf("event after start not applied: %v", err)
	}
	if got := r.Applied(); got != next {
		t.Errorf("Applied = %d, want %d", got, next)
	}
	if err := r.Run(ctx); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Run = %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	if err := r.WaitFor(context.Background(), next+1); !errors.Is(err, ErrStopped) {
		t.Errorf("WaitFor after stop = %v", err)
	}
}

// gated blocks Apply of seq `at` until gate closes.
type gated struct {
	counting
	gate chan struct{}
	at   uint64
}

func (g *gated) Apply(tx *bolt.Tx, ev events.Envelope) error {
	if ev.Seq == g.at {
		<-g.gate
	}
	return g.counting.Apply(tx, ev)
}

func TestNewRejectsBadProjections(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	for _, projs := range [][]Projection{
		{&counting{name: "a", version: 1}, &counting{name: "a", version: 1}},
		{&counting{name: "", version: 1}},
		{&counting{name: "a", version: 0}},
	} {
		if _, err := New(st, projs, Options{}); err == nil {
			t.Errorf("New accepted %v", projs)
		}
	}
	r, err := New(st, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil || !r.Ready() {
		t.Errorf("no projections: %v ready=%v", err, r.Ready())
	}
}

// migrating is a counting projection that can migrate rows of older
// versions (it rewrites every row's version mark).
type migrating struct {
	counting
	from int // the version Migrate was called with
}

func (m *migrating) Migrate(tx *bolt.Tx, from int) error {
	m.from = from
	b := tx.Bucket([]byte(m.name + ".rows"))
	return b.ForEach(func(k, _ []byte) error { return b.Put(k, []byte(strconv.Itoa(m.version))) })
}

// TestVersionBumpAfterCompaction: when the log before a projection's
// rows was compacted, a new version of it cannot rebuild from the log;
// the rows of the snapshot are of the old version, so the runner must
// not restore them unchecked: it migrates them when the projection can,
// and refuses, naming both versions, when it cannot.
func TestVersionBumpAfterCompaction(t *testing.T) {
	setup := func(t *testing.T) *store.Store {
		st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
		appendTicks(t, st, 0, 20)
		// The runner snapshots after a purge.
		at := t0.Add(30 * time.Second)
		purge := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{Counts: map[string]int{}}, at)
		purge.Source = "retention"
		if _, err := st.Append(context.Background(), purge); err != nil {
			t.Fatal(err)
		}
		appendTicks(t, st, 40, 3)
		r, _ := New(st, []Projection{&counting{name: "a", version: 1}}, Options{SnapshotEvery: 5 * time.Second})
		if err := r.CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		snaps, err := st.Snapshots()
		if err != nil || len(snaps) == 0 {
			t.Fatalf("no snapshot: %v", err)
		}
		if _, err := st.Compact(context.Background(), snaps[len(snaps)-1].Seq); err != nil {
			t.Fatal(err)
		}
		if st.First() <= 1 {
			t.Fatal("nothing was compacted")
		}
		return st
	}
	t.Run("refused without a migration", func(t *testing.T) {
		st := setup(t)
		defer st.Close()
		r, _ := New(st, []Projection{&counting{name: "a", version: 2}}, Options{})
		err := r.CatchUp(context.Background())
		if !errors.Is(err, ErrSnapshotVersion) || !strings.Contains(err.Error(), "version 1") || !strings.Contains(err.Error(), "version 2") {
			t.Fatalf("catch up of v2 over a compacted v1 log: %v", err)
		}
	})
	t.Run("migrated when the projection can", func(t *testing.T) {
		st := setup(t)
		defer st.Close()
		m := &migrating{counting: counting{name: "a", version: 2}}
		r, _ := New(st, []Projection{m}, Options{})
		if err := r.CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m.from != 1 {
			t.Fatalf("Migrate called with from=%d, want 1", m.from)
		}
		// the snapshot's rows restored, the events after it applied
		rowsOf(t, st, "a", st.Head())
		_ = st.DB().View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("a.rows")).ForEach(func(k, v []byte) error {
				if string(v) != "2" {
					t.Errorf("row %x still of version %s after the migration", k, v)
				}
				return nil
			})
		})
	})
	t.Run("same version restores as before", func(t *testing.T) {
		st := setup(t)
		defer st.Close()
		r, _ := New(st, []Projection{&counting{name: "a", version: 1}, &counting{name: "new", version: 1}}, Options{})
		if err := r.CatchUp(context.Background()); err != nil {
			t.Fatalf("catch up with unchanged versions: %v", err)
		}
	})
}

// preparing is a counting projection that is also a Preparer: it counts
// how often each seq is prepared, and checks that what it applies is what
// it prepared of that very event.
type preparing struct {
	counting
	pmu      sync.Mutex
	prepared map[uint64]int
	flushes  int // batches applied
}

func (p *preparing) Prepare(ev events.Envelope) (any, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.prepared == nil {
		p.prepared = map[uint64]int{}
	}
	p.prepared[ev.Seq]++
	return ev.Seq, nil
}

func (p *preparing) Flush(*bolt.Tx) error {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	p.flushes++
	return nil
}

func (p *preparing) ApplyPrepared(tx *bolt.Tx, ev events.Envelope, prepared any) error {
	if s, ok := prepared.(uint64); !ok || s != ev.Seq {
		return fmt.Errorf("seq %d applied with what was prepared of %v", ev.Seq, prepared)
	}
	return p.Apply(tx, ev)
}

// appendPurgedTicks appends n rounds of 10 clock ticks (one a second from
// t0 + 100 s × round) and a retention.purged 50 s into the round, and
// returns the purges as appended.
func appendPurgedTicks(t *testing.T, st *store.Store, n int) []events.Envelope {
	t.Helper()
	var purges []events.Envelope
	for h := range n {
		appendTicks(t, st, h*100, 10)
		at := t0.Add(time.Duration(h*100+50) * time.Second)
		purge := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{Counts: map[string]int{}}, at)
		purge.Source = "retention"
		out, err := st.Append(context.Background(), purge)
		if err != nil {
			t.Fatal(err)
		}
		purges = append(purges, out[0])
	}
	return purges
}

// TestPurgesDoNotRereadTheLog: a batch ends after each retention.purged
// (a snapshot may follow it), and what the batch held after it goes on to
// the next batch as it was read and prepared: every event is prepared
// once, however many purges the log holds (a log with an hourly purge
// once cost a whole batch of reading and preparing per hour).
func TestPurgesDoNotRereadTheLog(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	appendPurgedTicks(t, st, 40)
	head := appendTicks(t, st, 5000, 7)
	p := &preparing{counting: counting{name: "a", version: 1}}
	r, err := New(st, []Projection{p}, Options{BatchSize: 100, SnapshotEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	rowsOf(t, st, "a", head)
	if len(p.prepared) != int(head) {
		t.Fatalf("%d events prepared, want %d", len(p.prepared), head)
	}
	for seq, n := range p.prepared {
		if n != 1 {
			t.Fatalf("seq %d prepared %d times", seq, n)
		}
	}
	if snaps, err := st.Snapshots(); err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot after the purges: %v", err)
	}
}

// TestBatchesCutOnlyForSnapshots: a purge ends a batch only when a
// snapshot is due at it (the newest is SnapshotEvery older), and the
// snapshots are where that rule puts them.
func TestBatchesCutOnlyForSnapshots(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	purges := appendPurgedTicks(t, st, 12)
	head := appendTicks(t, st, 5000, 7)
	p := &preparing{counting: counting{name: "a", version: 1}}
	r, err := New(st, []Projection{p}, Options{BatchSize: 1000, SnapshotEvery: 350 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	rowsOf(t, st, "a", head)
	// Purges at 50, 150, ... 1150 s: due at 50 (none before), 450, 850.
	snaps, err := st.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, s := range snaps {
		got = append(got, s.Seq)
	}
	want := []uint64{purges[0].Seq, purges[4].Seq, purges[8].Seq}
	if !slices.Equal(got, want) {
		t.Fatalf("snapshots at %v, want %v (the purges a snapshot was due at)", got, want)
	}
	// One batch up to each of them, and one for the rest.
	if p.flushes != len(want)+1 {
		t.Fatalf("%d batches, want %d", p.flushes, len(want)+1)
	}
}

// sharing is a counting projection that prepares sweeps from the shared
// payload: it records the payload each sweep came with, and which seqs it
// prepared on its own.
type sharing struct {
	counting
	pmu    sync.Mutex
	shared map[uint64]any
	own    map[uint64]bool
}

func (p *sharing) SharedPayload(kind string) (*events.Registry, bool) {
	return events.Default, kind == events.KindSweepCompleted
}

func (p *sharing) PrepareShared(ev events.Envelope, payload any) (any, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.shared == nil {
		p.shared = map[uint64]any{}
	}
	p.shared[ev.Seq] = payload
	return ev.Seq, nil
}

func (p *sharing) Prepare(ev events.Envelope) (any, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.own == nil {
		p.own = map[uint64]bool{}
	}
	p.own[ev.Seq] = true
	return ev.Seq, nil
}

func (p *sharing) ApplyPrepared(tx *bolt.Tx, ev events.Envelope, prepared any) error {
	if s, ok := prepared.(uint64); !ok || s != ev.Seq {
		return fmt.Errorf("seq %d applied with what was prepared of %v", ev.Seq, prepared)
	}
	return p.Apply(tx, ev)
}

// TestSharedPayloadDecodedOnce: the projections that prepare sweeps from
// the shared payload get the same decoded value, decoded once; other
// kinds, and a sweep whose payload does not decode, are prepared by each
// on its own.
func TestSharedPayloadDecodedOnce(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	var evs []events.Envelope
	for k := range 600 {
		at := t0.Add(time.Duration(k) * time.Second)
		var e events.Envelope
		switch {
		case k%3 == 0:
			e = events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
		case k == 301:
			e = events.MustNew(events.KindSweepCompleted, events.SweepCompleted{ScanID: "bad"}, at)
			e.Payload = []byte(`{"scan_id": 7, "hosts": "none"}`) // does not decode
		default:
			e = events.MustNew(events.KindSweepCompleted, events.SweepCompleted{ScanID: strconv.Itoa(k), Complete: true,
				Hosts: []events.SweepHost{{IP: "10.0.0.1"}}}, at)
		}
		e.Source = "test"
		evs = append(evs, e)
	}
	out, err := st.Append(context.Background(), evs...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := &sharing{counting: counting{name: "a", version: 1}}, &sharing{counting: counting{name: "b", version: 1}}
	plain := &preparing{counting: counting{name: "c", version: 1}}
	r, err := New(st, []Projection{a, plain, b}, Options{BatchSize: 250})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, e := range out {
		sweep := e.Kind == events.KindSweepCompleted
		decodes := sweep && k != 301
		pa, pb := a.shared[e.Seq], b.shared[e.Seq]
		switch {
		case decodes && (pa == nil || pa != pb):
			t.Fatalf("seq %d (a sweep): payloads %p and %p, want one shared value", e.Seq, pa, pb)
		case decodes && (a.own[e.Seq] || b.own[e.Seq]):
			t.Fatalf("seq %d (a sweep): prepared on its own too", e.Seq)
		case !decodes && (pa != nil || pb != nil || !a.own[e.Seq] || !b.own[e.Seq]):
			t.Fatalf("seq %d (%s): shared %v/%v, own %v/%v; want each on its own", e.Seq, e.Kind, pa, pb, a.own[e.Seq], b.own[e.Seq])
		}
		if plain.prepared[e.Seq] != 1 {
			t.Fatalf("seq %d prepared %d times by the plain Preparer", e.Seq, plain.prepared[e.Seq])
		}
		if sc, ok := pa.(*events.SweepCompleted); decodes && (!ok || sc.ScanID != strconv.Itoa(k)) {
			t.Fatalf("seq %d: shared payload %#v", e.Seq, pa)
		}
	}
	rowsOf(t, st, "a", out[len(out)-1].Seq)
}

// Batches are bounded by their payloads' size too: the first read is at
// most firstBatch events, the next ones as many as maxBatchBytes holds at
// the size the events before had (never fewer than prepareChunk, never
// more than BatchSize). Every event is applied once, in order.
func TestBatchesBoundedByBytes(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	head := appendTicks(t, st, 0, 4000)
	size := len(mustRead(t, st, 1).Payload)
	for _, c := range []struct {
		name  string
		bytes int
		want  int // batches
	}{
		{"small events: BatchSize long after the first", 16 << 20, 2},                                // 1,024 + 2,976
		{"a bound of 512 events", 512 * size, 1 + (4000-firstBatch+511)/512},                         // 1,024 + 6 × 512
		{"a bound below prepareChunk", 10 * size, 1 + (4000-firstBatch+prepareChunk-1)/prepareChunk}, // 1,024 + 12 × 256
	} {
		t.Run(c.name, func(t *testing.T) {
			prev := maxBatchBytes
			maxBatchBytes = c.bytes
			defer func() { maxBatchBytes = prev }()
			p := &preparing{counting: counting{name: "a" + strconv.Itoa(c.bytes), version: 1}}
			catchUpInBatches(t, st, p, head)
			if p.flushes != c.want {
				t.Errorf("%d batches, want %d", p.flushes, c.want)
			}
		})
	}
}

// batchBytes records the largest payload bytes of a batch it applied.
type batchBytes struct {
	preparing
	cur, most int
}

func (p *batchBytes) ApplyPrepared(tx *bolt.Tx, ev events.Envelope, prepared any) error {
	p.cur += len(ev.Payload)
	return p.preparing.ApplyPrepared(tx, ev, prepared)
}

func (p *batchBytes) Flush(tx *bolt.Tx) error {
	p.most, p.cur = max(p.most, p.cur), 0
	return p.preparing.Flush(tx)
}

// Batches of large events (flow windows, megabytes each, here 300 KB)
// are bounded by their stored bytes before they are read: the first
// batch, sized before any event is known, and a batch after small
// events, sized by them, hold no more than maxBatchStored (but for one
// event larger).
func TestBatchesOfLargeEventsBoundedBeforeTheRead(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	const large = 300 << 10
	appendTicks(t, st, 0, 100)
	var head uint64
	for k := range 40 {
		at := t0.Add(time.Duration(200+k*10) * time.Second)
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{ScanID: strings.Repeat("x", large)}, at)
		if _, err := st.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		head = appendTicks(t, st, 201+k*10, 5)
	}
	prev := maxBatchStored
	maxBatchStored = 1 << 20
	defer func() { maxBatchStored = prev }()
	for _, size := range []int{large / 2, 2 << 20} {
		n, err := st.Span(101, 1000, int64(size))
		if want := max(1, size/large); err != nil || n < want || n > want*6+5 {
			t.Fatalf("Span(101, 1000, %d) = %d, %v; want %d large events and the ticks between", size, n, err, want)
		}
	}
	p := &batchBytes{preparing: preparing{counting: counting{name: "large", version: 1}}}
	catchUpInBatches(t, st, p, head)
	if p.most > maxBatchStored || p.most < large {
		t.Errorf("a batch held %d bytes of payloads, want at most %d", p.most, maxBatchStored)
	}
	t.Logf("%d batches, the largest %d bytes of payloads", p.flushes, p.most)
}

// catchUpInBatches catches p up with st in batches of up to 10,000
// events and checks that it applied every event up to head.
func catchUpInBatches(t *testing.T, st *store.Store, p Projection, head uint64) {
	t.Helper()
	r, err := New(st, []Projection{p}, Options{BatchSize: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	rowsOf(t, st, p.Name(), head)
}

func mustRead(t *testing.T, st *store.Store, seq uint64) events.Envelope {
	t.Helper()
	evs, err := st.Read(seq, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("read %d: %v", seq, err)
	}
	return evs[0]
}
