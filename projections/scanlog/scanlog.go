package scanlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Name is the projection's consumer name. Never rename it.
const Name = "scanlog"

// Version of the rows; raising it rebuilds them from the log. 2: a flow
// window's entry lists its exporters and datagrams and says each drop
// reason in its own unit (1 summed them all as datagrams). The row
// layout (rowFormat) is unchanged.
const Version = 2

// Buckets: see the package documentation.
const (
	// BucketScans holds the entries.
	BucketScans = "scanlog.scans"
	// BucketSweeps holds each sweep source's last sweep: source → seq
	// (8) | responders (4).
	BucketSweeps = "scanlog.sweeps"
)

var (
	bScans  = []byte(BucketScans)
	bSweeps = []byte(BucketSweeps)
)

// baseMissing is said of a sweep written as the difference from a sweep
// the log does not hold (the sink never writes one): the inventory, which
// holds the same bases, applies only its whole hosts, as incomplete.
const baseMissing = "this sweep's base is missing from the inventory: responders it names by reference are not applied"

// sweepBase is what the log keeps of a source's last sweep: enough to
// tell whether the next one's references resolve.
type sweepBase struct {
	seq uint64
	n   int
}

// Paging of ListScans.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ErrNotLoaded is returned by queries before the runner loaded the log.
var ErrNotLoaded = errors.New("scanlog: not loaded")

// Log is the scan log projection.
type Log struct {
	reg *events.Registry

	mu    sync.RWMutex
	db    *bolt.DB // set by Load; queries read it
	bases map[string]sweepBase
	dirty map[string]bool // sources whose base Flush writes
	// pending are the batch's rows, written at Flush (or before a purge)
	// in key order: bbolt splits a leaf only at commit, so rows put one
	// by one during the batch each search the one leaf they pile into.
	pending []pendingRow
}

type pendingRow struct{ key, row []byte }

// New returns an empty scan log that decodes payloads with reg (nil:
// events.Default).
func New(reg *events.Registry) *Log {
	if reg == nil {
		reg = events.Default
	}
	return &Log{reg: reg, bases: map[string]sweepBase{}, dirty: map[string]bool{}}
}

// Name implements runner.Projection.
func (l *Log) Name() string { return Name }

// Version implements runner.Projection.
func (l *Log) Version() int { return Version }

// Buckets implements runner.Projection.
func (l *Log) Buckets() []string { return []string{BucketScans, BucketSweeps} }

// Load implements runner.Projection: each sweep source's last sweep
// comes back into memory.
func (l *Log) Load(tx *bolt.Tx) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.db = tx.DB()
	l.bases, l.dirty = map[string]sweepBase{}, map[string]bool{}
	l.pending = nil
	b := tx.Bucket(bSweeps)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		if len(v) != 12 {
			return fmt.Errorf("scanlog: load: sweep base of %q: %d bytes", k, len(v))
		}
		l.bases[string(k)] = sweepBase{seq: binary.BigEndian.Uint64(v), n: int(binary.BigEndian.Uint32(v[8:]))}
		return nil
	})
}

// Apply implements runner.Projection.
func (l *Log) Apply(tx *bolt.Tx, ev events.Envelope) error {
	p, err := l.Prepare(ev)
	if err != nil {
		return err
	}
	return l.ApplyPrepared(tx, ev, p)
}

// prepared is what Prepare hands to ApplyPrepared: the entry to put
// (with its row when it does not depend on earlier sweeps), or the cutoff
// to purge before.
type prepared struct {
	scan     projections.Scan
	sweep    bool // a sweep: refs says what it repeats
	refs     sweepRefs
	key, row []byte
	purge    *purge
}

// Prepare implements runner.Preparer: it decodes the header of a run's
// event and encodes its row (nil for events that are not runs).
func (l *Log) Prepare(ev events.Envelope) (any, error) {
	var (
		s    projections.Scan
		refs *sweepRefs
		err  error
	)
	switch ev.Kind {
	case events.KindSweepCompleted:
		var r sweepRefs
		s, r, err = l.sweepScan(ev)
		refs = &r
	case events.KindPortScanCompleted:
		s, err = l.portScan(ev)
	case events.KindPluginRead:
		s, err = l.readScan(ev)
	case events.KindDNSRead:
		s, err = l.dnsScan(ev)
	case events.KindTrafficRecorded:
		s, err = l.flowScan(ev)
	case events.KindScanFailed:
		s, err = l.failedScan(ev)
	case events.KindRetentionPurged:
		pg, err := l.purgeOf(ev)
		if err != nil || pg == nil {
			return nil, err
		}
		return &prepared{purge: pg}, nil
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scanlog: seq %d: %w", ev.Seq, err)
	}
	return prepareScan(ev, s, refs)
}

// SharedPayload implements runner.SharedPreparer: the entries of sweeps,
// port scans and plugin reads are made from the payload the runner
// decodes once for the inventory too (which saves reading each a second
// time: a read or a port scan went through encoding/json here).
func (l *Log) SharedPayload(kind string) (*events.Registry, bool) {
	switch kind {
	case events.KindSweepCompleted, events.KindPortScanCompleted, events.KindPluginRead:
		return l.reg, true
	}
	return nil, false
}

// PrepareShared implements runner.SharedPreparer: Prepare of a run whose
// payload is decoded. It only reads the payload.
func (l *Log) PrepareShared(ev events.Envelope, payload any) (any, error) {
	var (
		s    projections.Scan
		refs *sweepRefs
	)
	switch v := payload.(type) {
	case *events.SweepCompleted:
		var r sweepRefs
		s, r = sweepScanOf(headOf(v))
		refs = &r
	case *events.PortScanCompleted:
		s = portScanOf(v)
	case *events.PluginRead:
		s = readScanOf(readHead{ScanID: v.ScanID, Kind: v.Kind, Started: v.Started, Finished: v.Finished,
			Complete: v.Complete, Errors: v.Errors, Rows: v.Rows, Hosts: v.Hosts})
	default:
		return nil, fmt.Errorf("scanlog: seq %d: shared payload of type %T", ev.Seq, payload)
	}
	return prepareScan(ev, s, refs)
}

// prepareScan completes a run's entry from its event and encodes its
// row when it does not depend on earlier sweeps.
func prepareScan(ev events.Envelope, s projections.Scan, refs *sweepRefs) (any, error) {
	var err error
	if s.ID == "" {
		s.ID = ev.ID
	}
	s.Source = ev.Source
	if s.Finished.IsZero() {
		s.Finished = ev.Time.UTC()
	}
	if s.Started.IsZero() {
		s.Started = s.Finished
	}
	s.DurationMS = s.Finished.Sub(s.Started).Milliseconds()
	if s.Networks == nil {
		s.Networks = []string{}
	}
	if s.Errors == nil {
		s.Errors = []string{}
	}
	pp := &prepared{scan: s, sweep: refs != nil}
	if refs != nil {
		pp.refs = *refs
	}
	if refs == nil || refs.base == 0 {
		// Nothing to check against earlier sweeps: encode it here, off
		// the apply goroutine.
		if pp.key, pp.row, err = encodeRow(ev.Seq, &pp.scan); err != nil {
			return nil, fmt.Errorf("scanlog: seq %d: %w", ev.Seq, err)
		}
	}
	return pp, nil
}

// ApplyPrepared implements runner.Preparer.
func (l *Log) ApplyPrepared(tx *bolt.Tx, ev events.Envelope, p any) error {
	pp, _ := p.(*prepared)
	if pp == nil {
		return nil
	}
	b := tx.Bucket(bScans)
	if b == nil {
		return fmt.Errorf("scanlog: apply seq %d: bucket %s missing", ev.Seq, BucketScans)
	}
	if pp.purge != nil {
		if err := l.putPending(b); err != nil {
			return fmt.Errorf("scanlog: apply seq %d: %w", ev.Seq, err)
		}
		if err := deleteBefore(b, pp.purge.before); err != nil {
			return fmt.Errorf("scanlog: apply seq %d: purge: %w", ev.Seq, err)
		}
		return nil
	}
	if pp.sweep {
		if err := l.applySweep(ev, pp); err != nil {
			return fmt.Errorf("scanlog: apply seq %d: %w", ev.Seq, err)
		}
	}
	l.pending = append(l.pending, pendingRow{pp.key, pp.row})
	return nil
}

// putPending writes the batch's rows so far, in key order.
func (l *Log) putPending(b *bolt.Bucket) error {
	if len(l.pending) == 0 {
		return nil
	}
	slices.SortStableFunc(l.pending, func(x, y pendingRow) int { return bytes.Compare(x.key, y.key) })
	// Entries are appended in finish-time order (nearly always): pack
	// the pages nearly full instead of splitting them half full.
	b.FillPercent = 0.95
	for _, r := range l.pending {
		if err := b.Put(r.key, r.row); err != nil {
			return err
		}
	}
	clear(l.pending)
	l.pending = l.pending[:0]
	return nil
}

// loadedDB returns the database Load saw.
func (l *Log) loadedDB() (*bolt.DB, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.db == nil {
		return nil, ErrNotLoaded
	}
	return l.db, nil
}

// applySweep checks a sweep written as a difference against its source's
// last sweep, as the inventory resolves it, and records the sweep as the
// source's last.
func (l *Log) applySweep(ev events.Envelope, pp *prepared) error {
	r := &pp.refs
	n := r.whole + len(r.same)/2
	if r.base != 0 {
		if !l.resolves(ev.Source, r) {
			pp.scan.Complete = false
			pp.scan.Errors = append(append([]string{}, pp.scan.Errors...), baseMissing)
			pp.scan.HostsFound, n = r.whole, r.whole
		}
		var err error
		if pp.key, pp.row, err = encodeRow(ev.Seq, &pp.scan); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.bases[ev.Source] = sweepBase{seq: ev.Seq, n: n}
	l.dirty[ev.Source] = true
	l.mu.Unlock()
	return nil
}

// Flush implements runner.Flusher: the sweep bases changed since the
// last flush are written once per batch, not once per sweep.
func (l *Log) Flush(tx *bolt.Tx) error {
	if b := tx.Bucket(bScans); b != nil {
		if err := l.putPending(b); err != nil {
			return fmt.Errorf("scanlog: flush: %w", err)
		}
	} else if len(l.pending) > 0 {
		return fmt.Errorf("scanlog: flush: bucket %s missing", BucketScans)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dirty) == 0 {
		return nil
	}
	sb := tx.Bucket(bSweeps)
	if sb == nil {
		return fmt.Errorf("scanlog: flush: bucket %s missing", BucketSweeps)
	}
	for src := range l.dirty {
		b := l.bases[src]
		var v [12]byte
		binary.BigEndian.PutUint64(v[:], b.seq)
		binary.BigEndian.PutUint32(v[8:], uint32(min(b.n, 1<<32-1)))
		if err := sb.Put([]byte(src), v[:]); err != nil {
			return fmt.Errorf("scanlog: flush: %w", err)
		}
	}
	clear(l.dirty)
	return nil
}

// resolves reports whether every responder a difference names by
// reference is in its source's last sweep (events.ResolveSweep's test).
func (l *Log) resolves(src string, r *sweepRefs) bool {
	l.mu.RLock()
	b, ok := l.bases[src]
	l.mu.RUnlock()
	if !ok || b.seq != r.base || len(r.same)%2 != 0 {
		return false
	}
	for i := 0; i < len(r.same); i += 2 {
		if idx := r.same[i]; idx < 0 || idx >= int64(b.n) {
			return false
		}
	}
	return true
}
