package store

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// Bucket names owned by the store. Projections keep their own buckets in
// the same file under names of their own.
const (
	// BucketLog holds the events: key = 8-byte big-endian seq, value =
	// json.Marshal of the [events.Envelope], hash included, or the stub
	// of a value stored out of line in [BucketLogParts].
	BucketLog = "log"
	// BucketMeta holds the schema version, head seq, head hash and the
	// compaction anchor.
	BucketMeta = "meta"
	// BucketCheckpoints holds one 8-byte big-endian seq per consumer name.
	BucketCheckpoints = "checkpoints"
	// BucketSnapshots holds one nested bucket per snapshot, named by its
	// 8-byte big-endian seq, with keys "info" (JSON) and "data" (gzip, snapcodec.go).
	BucketSnapshots = "snapshots"
)

// SchemaVersion is the newest layout version this build reads, in
// meta/"schema": 1, raised to 2 when the file first holds an
// out-of-line value (logvalue.go). New files start at 1.
const SchemaVersion = schemaOutOfLine

// schemaFirst is the version a new file is written with.
const schemaFirst = 1

// Keys in BucketMeta.
var (
	metaSchema   = []byte("schema")    // 8-byte big-endian SchemaVersion
	metaHead     = []byte("head")      // 8-byte big-endian seq of the last event
	metaHeadHash = []byte("head_hash") // hex hash of the last event (ZeroHash when none)
	metaAnchor   = []byte("anchor")    // JSON anchor; absent until the first compaction
)

// Keys inside a snapshot's nested bucket.
var (
	snapInfo = []byte("info")
	snapData = []byte("data")
)

var (
	bLog         = []byte(BucketLog)
	bMeta        = []byte(BucketMeta)
	bCheckpoints = []byte(BucketCheckpoints)
	bSnapshots   = []byte(BucketSnapshots)
)

// reserved reports whether name is one of the store's own buckets that a
// snapshot must never dump or overwrite.
func reserved(name string) bool {
	return name == BucketLog || name == BucketLogParts || name == BucketMeta || name == BucketSnapshots
}

// seqKey encodes seq as an 8-byte big-endian key, so keys sort by seq.
func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// keySeq decodes an 8-byte big-endian key; ok is false for any other length.
func keySeq(k []byte) (uint64, bool) {
	if len(k) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k), true
}

// anchor is where the chain continues after compaction: the seq and hash
// of the last removed event.
type anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// decodeAnchor parses meta/"anchor"; nil means no compaction yet.
func decodeAnchor(b []byte) (anchor, error) {
	if b == nil {
		return anchor{Hash: events.ZeroHash}, nil
	}
	var a anchor
	if err := json.Unmarshal(b, &a); err != nil {
		return anchor{}, fmt.Errorf("anchor: %w", err)
	}
	if !validHash(a.Hash) {
		return anchor{}, fmt.Errorf("anchor: hash %q is not a hex SHA-256", a.Hash)
	}
	return a, nil
}

// validHash reports whether h is 64 lower-case hex characters.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hashBytes decodes a hash already checked by validHash.
func hashBytes(h string) []byte {
	b, _ := hex.DecodeString(h)
	return b
}

// u64 decodes an 8-byte big-endian value; ok is false for any other length.
func u64(b []byte) (uint64, bool) { return keySeq(b) }

// readState is what meta and the log say the chain looks like.
type readState struct {
	fresh    bool // no buckets at all: a new file
	head     uint64
	headHash string
	anchor   anchor
}

// checkStructure checks the cheap invariants: the store's buckets exist,
// the schema is known, head and its hash agree with the last key of the log
// and the log's sequence, and the anchor is sane. It reads meta, the last
// log entry and nothing else.
func checkStructure(tx *bolt.Tx) (readState, error) {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if empty {
			return readState{fresh: true, headHash: events.ZeroHash, anchor: anchor{Hash: events.ZeroHash}}, nil
		}
		return readState{}, fmt.Errorf("%w: not a jocasta database (no %q bucket)", ErrCorrupt, BucketMeta)
	}
	ver, ok := u64(meta.Get(metaSchema))
	if !ok || ver < 1 {
		return readState{}, fmt.Errorf("%w: schema version missing", ErrCorrupt)
	}
	if ver > SchemaVersion {
		return readState{}, fmt.Errorf("%w: file has v%d, this build knows v%d", ErrSchemaVersion, ver, SchemaVersion)
	}
	for _, b := range [][]byte{bLog, bCheckpoints, bSnapshots} {
		if tx.Bucket(b) == nil {
			return readState{}, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, b)
		}
	}
	var st readState
	if st.head, ok = u64(meta.Get(metaHead)); !ok {
		return readState{}, fmt.Errorf("%w: head missing in meta", ErrCorrupt)
	}
	st.headHash = string(meta.Get(metaHeadHash))
	if !validHash(st.headHash) {
		return readState{}, fmt.Errorf("%w: head hash in meta is not a hex SHA-256", ErrCorrupt)
	}
	a, err := decodeAnchor(meta.Get(metaAnchor))
	if err != nil {
		return readState{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	st.anchor = a
	if a.Seq > st.head {
		return readState{}, fmt.Errorf("%w: anchor seq %d beyond head %d", ErrCorrupt, a.Seq, st.head)
	}
	lb := tx.Bucket(bLog)
	if lb.Sequence() != st.head {
		return readState{}, fmt.Errorf("%w: log sequence %d disagrees with head %d", ErrCorrupt, lb.Sequence(), st.head)
	}
	k, v := lb.Cursor().Last()
	if k == nil {
		// Empty log: new, or compacted through head.
		if st.head != a.Seq || st.headHash != a.Hash {
			return readState{}, fmt.Errorf("%w: log is empty but head is %d", ErrCorrupt, st.head)
		}
		return st, nil
	}
	last, ok := keySeq(k)
	if !ok || last != st.head {
		return readState{}, fmt.Errorf("%w: last key of the log is not head %d", ErrCorrupt, st.head)
	}
	full, _, err := logValue(tx, k, v)
	if err != nil {
		return readState{}, fmt.Errorf("%w: head event %d: %w", ErrCorrupt, st.head, err)
	}
	e, err := decodeEnvelope(full)
	if err != nil {
		return readState{}, fmt.Errorf("%w: head event %d does not decode: %w", ErrCorrupt, st.head, err)
	}
	if e.Seq != st.head || e.Hash != st.headHash {
		return readState{}, fmt.Errorf("%w: head event %d does not match the head hash in meta", ErrCorrupt, st.head)
	}
	return st, nil
}

// initBuckets creates the store's buckets in a fresh file.
func initBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{bLog, bMeta, bCheckpoints, bSnapshots} {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("create bucket %q: %w", b, err)
		}
	}
	meta := tx.Bucket(bMeta)
	if err := meta.Put(metaSchema, seqKey(schemaFirst)); err != nil {
		return err
	}
	if err := meta.Put(metaHead, seqKey(0)); err != nil {
		return err
	}
	return meta.Put(metaHeadHash, []byte(events.ZeroHash))
}
