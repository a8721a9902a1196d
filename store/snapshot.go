package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// compactChunk is how many events one compaction transaction removes.
const compactChunk = 4096

// Snapshot is a dump of named buckets taken at a seq: what the consumers
// owning those buckets had derived from events 1..Seq. Nested buckets are
// kept as nested buckets ([KV.Nested]), with their sequences.
type Snapshot struct {
	// Seq is the last event the dumped state includes.
	Seq uint64 `json:"seq"`
	// Hash is the hash of event Seq (ZeroHash for 0), so a snapshot can
	// be matched to the chain it was taken from.
	Hash string `json:"hash"`
	// Time is when the snapshot was taken, UTC.
	Time time.Time `json:"time"`
	// Buckets maps a top-level bucket name to its pairs in key order. A
	// bucket that did not exist was dumped as empty.
	Buckets map[string][]KV `json:"buckets"`
	// Sequences holds the sequence (NextSequence) of each top-level
	// bucket whose sequence is not zero.
	Sequences map[string]uint64 `json:"sequences,omitempty"`
}

// KV is one key of a dumped bucket: a value, or a nested bucket.
type KV struct {
	K []byte `json:"k"`
	V []byte `json:"v,omitempty"`
	// Nested is true when K names a nested bucket; Bucket holds its pairs
	// and Sequence its sequence.
	Nested   bool   `json:"nested,omitempty"`
	Bucket   []KV   `json:"bucket,omitempty"`
	Sequence uint64 `json:"sequence,omitempty"`
}

// SnapshotInfo describes a stored snapshot without loading it.
type SnapshotInfo struct {
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	Time  time.Time `json:"time"`
	Bytes int       `json:"bytes"` // compressed size
}

// saveSnapshotAt dumps buckets, as they are in tx, into a snapshot at seq
// and stores it (compressed, snapcodec.go) in BucketSnapshots, replacing any snapshot at
// the same seq. tx must be writable, and the buckets' state must be the
// state derived from events 1..seq. Only tests call it (export_test.go);
// the runner snapshots through SaveSnapshotOfTx.
func saveSnapshotAt(tx *bolt.Tx, seq uint64, t time.Time, buckets []string) error {
	if !tx.Writable() {
		return fmt.Errorf("store: save snapshot %d: %w", seq, berrors.ErrTxNotWritable)
	}
	hash, err := hashAt(tx, seq)
	if err != nil {
		return fmt.Errorf("store: save snapshot %d: %w", seq, err)
	}
	return saveSnapshot(tx, seq, hash, t, buckets)
}

// SaveSnapshotOfTx dumps buckets, as they are in tx, into a snapshot at
// the event ev and stores it (compressed, snapcodec.go) in BucketSnapshots, replacing any
// snapshot at the same seq. tx must be writable, and the buckets' state
// must be the state derived from events 1..ev.Seq: take it in the
// transaction that moved the owners' checkpoints to ev.Seq. The store's
// own buckets (log, meta, snapshots) cannot be dumped; "checkpoints" can,
// and restoring it restores every consumer's position, reactors included,
// so dump it only if that is meant. The caller read ev from the log: ev may lie beyond the head tx sees when the log is
// being copied into this store while it is applied (replay), and its
// append commits later. When ev is within the head, its hash must be the
// one stored.
func SaveSnapshotOfTx(tx *bolt.Tx, ev events.Envelope, buckets []string) error {
	if !tx.Writable() {
		return fmt.Errorf("store: save snapshot %d: %w", ev.Seq, berrors.ErrTxNotWritable)
	}
	if ev.Seq == 0 || ev.Hash == "" {
		return fmt.Errorf("store: save snapshot %d: the event has no seq or hash", ev.Seq)
	}
	head, _ := u64(tx.Bucket(bMeta).Get(metaHead))
	if ev.Seq <= head {
		hash, err := hashAt(tx, ev.Seq)
		if err != nil {
			return fmt.Errorf("store: save snapshot %d: %w", ev.Seq, err)
		}
		if hash != ev.Hash {
			return fmt.Errorf("store: save snapshot %d: the event's hash is not the logged one: %w", ev.Seq, ErrCorrupt)
		}
	}
	return saveSnapshot(tx, ev.Seq, ev.Hash, ev.Time, buckets)
}

func saveSnapshot(tx *bolt.Tx, seq uint64, hash string, t time.Time, buckets []string) error {
	for _, name := range buckets {
		if reserved(name) {
			return fmt.Errorf("store: save snapshot %d: bucket %q belongs to the log", seq, name)
		}
	}
	data, err := encodeSnapshotTx(tx, seq, hash, t, buckets)
	if err != nil {
		return fmt.Errorf("store: save snapshot %d: %w", seq, err)
	}
	info, err := json.Marshal(SnapshotInfo{Seq: seq, Hash: hash, Time: t.UTC(), Bytes: data.size()})
	if err != nil {
		return fmt.Errorf("store: save snapshot %d: %w", seq, err)
	}
	sb := tx.Bucket(bSnapshots)
	key := seqKey(seq)
	if sb.Bucket(key) != nil {
		if err := sb.DeleteBucket(key); err != nil {
			return fmt.Errorf("store: save snapshot %d: replace: %w", seq, err)
		}
	}
	nb, err := sb.CreateBucket(key)
	if err == nil {
		err = nb.Put(snapInfo, info)
	}
	if err == nil {
		err = putSnapshotData(nb, data)
	}
	if err != nil {
		return fmt.Errorf("store: save snapshot %d: %w", seq, err)
	}
	return nil
}

// putSnapshotData stores an encoded snapshot in its bucket nb: one value
// under snapData when it fits in snapChunk bytes (as every snapshot was
// stored before pieces), else its pieces, each under snapData, '/' and
// its index in six digits. bbolt keeps a value put until the commit
// writes it into pages of its own, so a snapshot stored in one value
// was held twice, once contiguous.
func putSnapshotData(nb *bolt.Bucket, data snapChunks) error {
	if data.size() <= snapChunk {
		return nb.Put(snapData, data.join())
	}
	for k, c := range data {
		if err := nb.Put(fmt.Appendf(snapPieces(), "%06d", k), c); err != nil {
			return err
		}
	}
	return nil
}

// snapPieces is the prefix of the keys of a snapshot's pieces.
func snapPieces() []byte { return append(slices.Clone(snapData), '/') }

// storedSnapshot returns the encoded snapshot at seq, copied out of the
// file, or an error wrapping ErrNotFound.
func (s *Store) storedSnapshot(seq uint64) (data []byte, err error) {
	err = safeView(s.db, func(tx *bolt.Tx) error {
		nb := tx.Bucket(bSnapshots).Bucket(seqKey(seq))
		if nb == nil {
			return ErrNotFound
		}
		data = snapshotData(nb)
		return nil
	})
	return data, err
}

// snapshotData returns the encoded snapshot stored in nb in one slice of
// its own (its pieces joined in order), nil when there is none.
func snapshotData(nb *bolt.Bucket) []byte {
	if v := nb.Get(snapData); v != nil {
		return bytes.Clone(v)
	}
	prefix := snapPieces()
	n := 0
	c := nb.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		n += len(v)
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, 0, n)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		out = append(out, v...)
	}
	return out
}

// hashAt returns the hash of event seq: from the log, the anchor, or
// ZeroHash for 0.
func hashAt(tx *bolt.Tx, seq uint64) (string, error) {
	meta := tx.Bucket(bMeta)
	head, _ := u64(meta.Get(metaHead))
	if seq > head {
		return "", fmt.Errorf("seq %d is beyond head %d", seq, head)
	}
	if seq == 0 {
		return events.ZeroHash, nil
	}
	if v := tx.Bucket(bLog).Get(seqKey(seq)); v != nil {
		full, _, err := logValue(tx, seqKey(seq), v)
		if err != nil {
			return "", fmt.Errorf("event %d: %w: %w", seq, ErrCorrupt, err)
		}
		e, err := decodeEnvelope(full)
		if err != nil {
			return "", fmt.Errorf("event %d: %w: %w", seq, ErrCorrupt, err)
		}
		return e.Hash, nil
	}
	a, err := decodeAnchor(meta.Get(metaAnchor))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if a.Seq == seq {
		return a.Hash, nil
	}
	return "", fmt.Errorf("event %d (compacted): %w", seq, ErrNotFound)
}

// checkKVs rejects empty keys, values on nested entries and nesting
// deeper than maxSnapDepth.
func checkKVs(kvs []KV) error { return checkKVsAt(kvs, 0) }

func checkKVsAt(kvs []KV, depth int) error {
	for _, kv := range kvs {
		if kv.Nested && depth >= maxSnapDepth {
			return fmt.Errorf("buckets nested deeper than %d", maxSnapDepth)
		}
		if len(kv.K) == 0 {
			return errors.New("empty key")
		}
		if kv.Nested && kv.V != nil {
			return fmt.Errorf("nested bucket %q has a value", kv.K)
		}
		if !kv.Nested && (kv.Bucket != nil || kv.Sequence != 0) {
			return fmt.Errorf("key %q has bucket contents but is not nested", kv.K)
		}
		if err := checkKVsAt(kv.Bucket, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// Snapshots lists the stored snapshots, oldest first.
func (s *Store) Snapshots() ([]SnapshotInfo, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("store: list snapshots: %w", ErrClosed)
	}
	var out []SnapshotInfo
	err := safeView(s.db, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSnapshots)
		return sb.ForEachBucket(func(k []byte) error {
			var info SnapshotInfo
			if err := json.Unmarshal(sb.Bucket(k).Get(snapInfo), &info); err != nil {
				return fmt.Errorf("snapshot %x: %w: %w", k, ErrCorrupt, err)
			}
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list snapshots: %w", err)
	}
	return out, nil
}

// LoadSnapshot returns the snapshot at seq, or an error wrapping
// ErrNotFound.
func (s *Store) LoadSnapshot(seq uint64) (*Snapshot, error) { return s.LoadSnapshotBuckets(seq, nil) }

// RestoreSnapshotTx replaces every bucket named in snap with its dumped
// contents, nested buckets and sequences included; buckets the snapshot
// does not name are untouched. The caller usually also sets the owning
// consumers' checkpoints to snap.Seq in the same transaction (or
// restores "checkpoints" from the snapshot).
func RestoreSnapshotTx(tx *bolt.Tx, snap *Snapshot) error {
	if !tx.Writable() {
		return fmt.Errorf("store: restore snapshot %d: %w", snap.Seq, berrors.ErrTxNotWritable)
	}
	names := make([]string, 0, len(snap.Buckets))
	for name := range snap.Buckets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if reserved(name) {
			return fmt.Errorf("store: restore snapshot %d: bucket %q belongs to the log", snap.Seq, name)
		}
		key := []byte(name)
		if tx.Bucket(key) != nil {
			if err := tx.DeleteBucket(key); err != nil {
				return fmt.Errorf("store: restore snapshot %d: drop %q: %w", snap.Seq, name, err)
			}
		}
		b, err := tx.CreateBucket(key)
		if err == nil {
			err = fillBucket(b, snap.Buckets[name])
		}
		if err == nil {
			err = b.SetSequence(snap.Sequences[name])
		}
		if err != nil {
			return fmt.Errorf("store: restore snapshot %d: bucket %q: %w", snap.Seq, name, err)
		}
	}
	return nil
}

// fillBucket puts kvs into the empty bucket b.
func fillBucket(b *bolt.Bucket, kvs []KV) error {
	for _, kv := range kvs {
		if !kv.Nested {
			if err := b.Put(kv.K, kv.V); err != nil {
				return fmt.Errorf("put %q: %w", kv.K, err)
			}
			continue
		}
		nb, err := b.CreateBucket(kv.K)
		if err != nil {
			return fmt.Errorf("create %q: %w", kv.K, err)
		}
		if err := fillBucket(nb, kv.Bucket); err != nil {
			return err
		}
		if err := nb.SetSequence(kv.Sequence); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSnapshotsBefore removes the snapshots with Seq < seq, except that
// it always keeps the newest snapshot, so the compaction anchor stays
// covered.
func (s *Store) DeleteSnapshotsBefore(seq uint64) error {
	if s.isClosed() {
		return fmt.Errorf("store: delete snapshots before %d: %w", seq, ErrClosed)
	}
	err := s.Update(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSnapshots)
		var keys [][]byte
		err := sb.ForEachBucket(func(k []byte) error {
			if n, ok := keySeq(k); ok && n < seq {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		newest, _ := sb.Cursor().Last()
		for _, k := range keys {
			if bytes.Equal(k, newest) {
				continue
			}
			if err := sb.DeleteBucket(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete snapshots before %d: %w", seq, err)
	}
	return nil
}

// Compact removes the events with seq <= through, in transactions of a
// few thousand keys, and records the seq and hash of the last one removed
// as the anchor, so Verify and later appends still chain. It needs a
// snapshot with Seq >= through (through beyond head counts as head), else
// ErrNoSnapshot. A
// cancelled ctx stops between transactions, leaving a consistent, partly
// compacted log. bbolt reuses the freed pages; the file does not shrink.
func (s *Store) Compact(ctx context.Context, through uint64) (removed int, err error) {
	if s.isClosed() {
		return 0, fmt.Errorf("store: compact through %d: %w", through, ErrClosed)
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()

	through = min(through, s.Head())
	var covered bool
	err = s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bSnapshots).Cursor().Last()
		n, ok := keySeq(k)
		covered = ok && n >= through
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: compact through %d: %w", through, err)
	}
	if !covered {
		return 0, fmt.Errorf("store: compact through %d: %w", through, ErrNoSnapshot)
	}
	for {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		var (
			n  int
			at anchor
		)
		err := s.Update(func(tx *bolt.Tx) error {
			lb := tx.Bucket(bLog)
			c := lb.Cursor()
			var keys, stubs [][]byte
			var last []byte
			for k, v := c.First(); k != nil && len(keys) < compactChunk; k, v = c.Next() {
				seq, ok := keySeq(k)
				if !ok {
					return fmt.Errorf("malformed key %x: %w", k, ErrCorrupt)
				}
				if seq > through {
					break
				}
				keys = append(keys, bytes.Clone(k))
				if isStub(v) {
					stubs = append(stubs, keys[len(keys)-1])
				}
				last = v
			}
			if len(keys) == 0 {
				return nil
			}
			full, _, err := logValue(tx, keys[len(keys)-1], last)
			if err != nil {
				return fmt.Errorf("event %x: %w: %w", keys[len(keys)-1], ErrCorrupt, err)
			}
			e, err := decodeEnvelope(full)
			if err != nil {
				return fmt.Errorf("event %x: %w: %w", keys[len(keys)-1], ErrCorrupt, err)
			}
			at = anchor{Seq: e.Seq, Hash: e.Hash}
			ab, err := json.Marshal(at)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := c.Bucket().Delete(k); err != nil {
					return err
				}
			}
			if err := deleteParts(tx, stubs); err != nil {
				return err
			}
			n = len(keys)
			return tx.Bucket(bMeta).Put(metaAnchor, ab)
		})
		if err != nil {
			return removed, fmt.Errorf("store: compact through %d: %w", through, err)
		}
		if n == 0 {
			return removed, nil
		}
		removed += n
		s.first.Store(at.Seq + 1)
	}
}
