package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// restorePart bounds one transaction of RestoreSnapshotBuckets: the
// pairs and nested buckets it writes. bbolt keeps every value put, and
// every page touched, until the transaction commits. A variable for
// tests.
var restorePart = 65536

// RestoreSnapshotBuckets replaces each bucket of names with its state in
// the snapshot at seq (empty, sequence 0, when the snapshot does not
// hold it), or, for nil names, every bucket the snapshot holds (as
// RestoreSnapshotTx does), streamed from the stored snapshot into
// transactions of at most restorePart pairs each. LoadSnapshot and
// RestoreSnapshotTx instead hold the whole snapshot decoded, then every
// restored pair in one transaction: the weekly snapshot of 90 days of
// 1,000 devices (21 MB stored, 1.5 M pairs) is 430 MB live as a
// Snapshot. The snapshot is first read through once, keeping nothing, so
// that a damaged one (ErrCorrupt) writes nothing. The buckets are
// consistent only once it returns nil: the caller moves its checkpoints
// after it, so that a restore cut short (a crash, ctx's end) is done
// again from the start.
func (s *Store) RestoreSnapshotBuckets(ctx context.Context, seq uint64, names []string) error {
	if s.readOnly {
		return fmt.Errorf("store: restore snapshot %d: %w", seq, ErrReadOnly)
	}
	for _, name := range names {
		if reserved(name) || name == "" {
			return fmt.Errorf("store: restore snapshot %d: bucket %q is not a projection's (the log's, or no name)", seq, name)
		}
	}
	return s.restoreSnapshot(seq, names, s.Update, &restoreWriter{db: s.db, ctx: ctx, names: names, all: names == nil,
		failed: s.Err, commitFailed: func(err error) error { return s.commitFailed("restore snapshot", err) }})
}

// RestoreSnapshotInto is RestoreSnapshotBuckets into another bbolt
// database, db (a tool's scratch file: jocasta whatif), for names
// (nil: every bucket the snapshot holds).
func (s *Store) RestoreSnapshotInto(ctx context.Context, db *bolt.DB, seq uint64, names []string) error {
	return s.restoreSnapshot(seq, names, db.Update, &restoreWriter{db: db, ctx: ctx, names: names, all: names == nil})
}

// restoreSnapshot restores the buckets names of the snapshot at seq: a
// v2 one checked whole, then streamed by w; one of the first format
// (small) decoded and put back in one transaction of update.
func (s *Store) restoreSnapshot(seq uint64, names []string, update func(func(*bolt.Tx) error) error, w *restoreWriter) error {
	if s.isClosed() {
		return fmt.Errorf("store: restore snapshot %d: %w", seq, ErrClosed)
	}
	data, err := s.storedSnapshot(seq)
	if err != nil {
		return fmt.Errorf("store: restore snapshot %d: %w", seq, err)
	}
	v2, err := isSnapshotV2(data)
	if err != nil {
		return fmt.Errorf("store: restore snapshot %d: %w: %w", seq, ErrCorrupt, err)
	}
	if !v2 {
		snap, err := decodeSnapshotBuckets(data, seq, names)
		if err != nil {
			return fmt.Errorf("store: restore snapshot %d: %w: %w", seq, ErrCorrupt, err)
		}
		for _, name := range names {
			if snap.Buckets[name] == nil {
				snap.Buckets[name] = []KV{}
			}
		}
		return update(func(tx *bolt.Tx) error { return RestoreSnapshotTx(tx, snap) })
	}
	if err := walkSnapshot(data, seq, nil); err != nil {
		return fmt.Errorf("store: restore snapshot %d: %w: %w", seq, ErrCorrupt, err)
	}
	defer w.rollback()
	if err := walkSnapshot(data, seq, w); err != nil {
		return fmt.Errorf("store: restore snapshot %d: %w", seq, err)
	}
	return nil
}

// isSnapshotV2 reports whether data is a snapshot of the binary layout.
func isSnapshotV2(data []byte) (bool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("decompress: %w", err)
	}
	magic := make([]byte, len(snapMagic))
	n, _ := io.ReadFull(zr, magic)
	return string(magic[:n]) == snapMagic, nil
}

// snapVisitor receives a snapshot's contents from walkSnapshot, in
// order. bucket reports whether the bucket's entries are wanted; the
// others are read past without a copy.
type snapVisitor interface {
	header(h snapHeader) error
	bucket(name string) (bool, error)
	put(k, v []byte) error
	nested(k []byte, seq uint64) error
	endNested() error
	end() error
}

// anySeq, as walkSnapshot's seq, takes a snapshot of any seq.
const anySeq = ^uint64(0)

// walkSnapshot reads a v2 snapshot (snapcodec.go) of seq (anySeq: any)
// from data, checking it (a valid hash, buckets once each and none of
// the log's, no empty key, nesting bounded, gzip's checksum), and hands
// what it holds to v (nil: a check only, which keeps nothing). The keys
// and values given to v are its own.
func walkSnapshot(data []byte, seq uint64, v snapVisitor) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	d := &snapReader{r: bufio.NewReaderSize(zr, 64<<10)}
	if _, err := d.r.Discard(len(snapMagic)); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	var h snapHeader
	if err := json.Unmarshal(d.bytes(), &h); d.err == nil && err != nil {
		return fmt.Errorf("decode: header: %w", err)
	}
	switch {
	case d.err != nil:
		return fmt.Errorf("decode: %w", d.err)
	case seq != anySeq && h.Seq != seq:
		return fmt.Errorf("decode: it says seq %d", h.Seq)
	case !validHash(h.Hash):
		return fmt.Errorf("decode: hash %q is not a hex SHA-256", h.Hash)
	}
	if v != nil {
		if err := v.header(h); err != nil {
			return err
		}
	}
	var seen []string
	for {
		name := d.bytes()
		if d.err != nil {
			return fmt.Errorf("decode: %w", d.err)
		}
		if len(name) == 0 {
			break
		}
		switch {
		case reserved(string(name)):
			return fmt.Errorf("decode: bucket name %q not allowed", name)
		case slices.Contains(seen, string(name)):
			return fmt.Errorf("decode: bucket %q twice", name)
		}
		seen = append(seen, string(name))
		keep := false
		if v != nil {
			var err error
			if keep, err = v.bucket(string(name)); err != nil {
				return err
			}
		}
		if err := d.walkEntries(0, keep, v); err != nil {
			return err
		}
		if d.err != nil {
			return fmt.Errorf("decode: bucket %q: %w", name, d.err)
		}
	}
	// The rest, for gzip's checksum.
	if _, err := io.Copy(io.Discard, d.r); err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	if v != nil {
		return v.end()
	}
	return nil
}

// walkEntries reads one bucket's entries (snapcodec.go), handing
// them to v when keep. Decoding errors are left in d.err; v's errors are
// returned.
func (d *snapReader) walkEntries(depth int, keep bool, v snapVisitor) error {
	for d.err == nil {
		tag, err := d.r.ReadByte()
		if err != nil {
			d.fail(err)
			return nil
		}
		switch tag {
		case snapEnd:
			return nil
		case snapValue:
			k := d.field(keep)
			val := d.field(keep)
			if d.err == nil && len(k) == 0 {
				d.fail(errors.New("empty key"))
			}
			if d.err == nil && keep {
				if err := v.put(k, val); err != nil {
					return err
				}
			}
		case snapNested:
			if depth >= maxSnapDepth {
				d.fail(fmt.Errorf("buckets nested deeper than %d", maxSnapDepth))
				return nil
			}
			k := d.field(true)
			seq := d.uvarint()
			if d.err == nil && len(k) == 0 {
				d.fail(errors.New("empty key"))
			}
			if d.err != nil {
				return nil
			}
			if keep {
				if err := v.nested(k, seq); err != nil {
					return err
				}
			}
			if err := d.walkEntries(depth+1, keep, v); err != nil || d.err != nil {
				return err
			}
			if keep {
				if err := v.endNested(); err != nil {
					return err
				}
			}
		default:
			d.fail(fmt.Errorf("entry tag %d", tag))
		}
	}
	return nil
}

// field reads one length-prefixed field: a slice of its own when keep
// (nil when empty), else past it (skipped when it was not empty).
func (d *snapReader) field(keep bool) []byte {
	if keep {
		return d.bytes()
	}
	n := d.length()
	if n == 0 {
		return nil
	}
	if _, err := d.r.Discard(n); err != nil {
		d.fail(err)
		return nil
	}
	return skipped
}

// skipped stands for a field read past (not empty, so that a key
// read past is not taken for an empty one).
var skipped = []byte{0}

// restoreWriter writes what walkSnapshot reads into the buckets named
// of db, in transactions of restorePart pairs.
type restoreWriter struct {
	db  *bolt.DB
	ctx context.Context
	// failed, when set, is the store's failure, which stops the writes;
	// commitFailed, when set, makes a failed commit the store's.
	failed       func() error
	commitFailed func(error) error
	names        []string
	all          bool       // every bucket of the snapshot, replaced as it comes
	head         snapHeader // the snapshot's
	tx           *bolt.Tx
	n            int // pairs and buckets written in tx
	path         [][]byte
	stack        []*bolt.Bucket // path's buckets, in tx
}

func (w *restoreWriter) begin() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.failed != nil {
		if err := w.failed(); err != nil {
			return fmt.Errorf("%w (%w)", ErrFailed, err)
		}
	}
	tx, err := w.db.Begin(true)
	if err != nil {
		return err
	}
	w.tx, w.n = tx, 0
	w.stack = w.stack[:0]
	for k, name := range w.path {
		var b *bolt.Bucket
		if k == 0 {
			b = tx.Bucket(name)
		} else {
			b = w.stack[k-1].Bucket(name)
		}
		if b == nil {
			return fmt.Errorf("bucket %q vanished between two parts", name)
		}
		w.stack = append(w.stack, b)
	}
	return nil
}

func (w *restoreWriter) commit() error {
	tx := w.tx
	w.tx = nil
	if err := tx.Commit(); err != nil {
		if w.commitFailed != nil {
			return w.commitFailed(err)
		}
		return err
	}
	return nil
}

func (w *restoreWriter) rollback() {
	if w.tx != nil {
		_ = w.tx.Rollback()
		w.tx = nil
	}
}

// wrote counts one pair or bucket, and moves to the next transaction
// once this one holds restorePart.
func (w *restoreWriter) wrote() error {
	if w.n++; w.n < restorePart {
		return nil
	}
	if err := w.commit(); err != nil {
		return err
	}
	return w.begin()
}

func (w *restoreWriter) header(h snapHeader) error {
	if err := w.begin(); err != nil {
		return err
	}
	w.head = h
	for _, name := range w.names {
		if err := w.replace(name); err != nil {
			return err
		}
	}
	return nil
}

// replace drops bucket name and makes it again, empty, with the
// snapshot's sequence for it.
func (w *restoreWriter) replace(name string) error {
	key := []byte(name)
	if w.tx.Bucket(key) != nil {
		if err := w.tx.DeleteBucket(key); err != nil {
			return fmt.Errorf("drop %q: %w", name, err)
		}
	}
	b, err := w.tx.CreateBucket(key)
	if err == nil {
		err = b.SetSequence(w.head.Sequences[name])
	}
	if err != nil {
		return fmt.Errorf("bucket %q: %w", name, err)
	}
	return nil
}

func (w *restoreWriter) bucket(name string) (bool, error) {
	switch {
	case w.all:
		if err := w.replace(name); err != nil {
			return false, err
		}
	case !slices.Contains(w.names, name):
		return false, nil
	}
	w.path = append(w.path[:0], []byte(name))
	w.stack = append(w.stack[:0], w.tx.Bucket([]byte(name)))
	return true, nil
}

func (w *restoreWriter) cur() *bolt.Bucket { return w.stack[len(w.stack)-1] }

func (w *restoreWriter) put(k, v []byte) error {
	if err := w.cur().Put(k, v); err != nil {
		return fmt.Errorf("put %q in %q: %w", k, w.path[0], err)
	}
	return w.wrote()
}

func (w *restoreWriter) nested(k []byte, seq uint64) error {
	nb, err := w.cur().CreateBucket(k)
	if err == nil {
		err = nb.SetSequence(seq)
	}
	if err != nil {
		return fmt.Errorf("create %q in %q: %w", k, w.path[0], err)
	}
	w.path, w.stack = append(w.path, k), append(w.stack, nb)
	return w.wrote()
}

func (w *restoreWriter) endNested() error {
	w.path, w.stack = w.path[:len(w.path)-1], w.stack[:len(w.stack)-1]
	return nil
}

func (w *restoreWriter) end() error { return w.commit() }

// LoadSnapshotBuckets is LoadSnapshot keeping only the buckets names
// (the others are read past without a copy; nil: every bucket): its
// Buckets holds those of names that the snapshot holds.
func (s *Store) LoadSnapshotBuckets(seq uint64, names []string) (*Snapshot, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("store: load snapshot %d: %w", seq, ErrClosed)
	}
	data, err := s.storedSnapshot(seq)
	if err != nil {
		return nil, fmt.Errorf("store: load snapshot %d: %w", seq, err)
	}
	snap, err := decodeSnapshotBuckets(data, seq, names)
	if err != nil {
		return nil, fmt.Errorf("store: load snapshot %d: %w: %w", seq, ErrCorrupt, err)
	}
	return snap, nil
}

// snapCollector keeps the buckets names (nil: every bucket) of what
// walkSnapshot reads, as a Snapshot.
type snapCollector struct {
	names []string
	snap  *Snapshot
	name  string     // the bucket being read, "" when none or not kept
	stack []snapNest // the bucket's entries, then each nested bucket's
}

type snapNest struct {
	k   []byte
	seq uint64
	kvs []KV
}

func (c *snapCollector) header(h snapHeader) error {
	c.snap = &Snapshot{Seq: h.Seq, Hash: h.Hash, Time: h.Time, Sequences: h.Sequences, Buckets: map[string][]KV{}}
	return nil
}

// done files the bucket read last.
func (c *snapCollector) done() {
	if c.name != "" {
		c.snap.Buckets[c.name] = c.stack[0].kvs
	}
	c.name, c.stack = "", nil
}

func (c *snapCollector) bucket(name string) (bool, error) {
	c.done()
	if c.names != nil && !slices.Contains(c.names, name) {
		return false, nil
	}
	c.name, c.stack = name, []snapNest{{kvs: []KV{}}}
	return true, nil
}

func (c *snapCollector) put(k, v []byte) error {
	top := &c.stack[len(c.stack)-1]
	top.kvs = append(top.kvs, KV{K: k, V: v})
	return nil
}

func (c *snapCollector) nested(k []byte, seq uint64) error {
	c.stack = append(c.stack, snapNest{k: k, seq: seq, kvs: []KV{}})
	return nil
}

func (c *snapCollector) endNested() error {
	n := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	top := &c.stack[len(c.stack)-1]
	top.kvs = append(top.kvs, KV{K: n.k, Nested: true, Sequence: n.seq, Bucket: n.kvs})
	return nil
}

func (c *snapCollector) end() error {
	c.done()
	return nil
}
