package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A snapshot is stored gzip-compressed in a binary layout (the first
// format, gzip(JSON(snap)), still decodes):
//
//	"jocasta snapshot v2\n"
//	bytes(JSON {"seq","hash","time","sequences"})
//	per bucket, by name: bytes(name) entries
//	bytes("")                                    end of the buckets
//
//	entries = per key: 1 bytes(key) bytes(value)
//	                 | 2 bytes(key) uvarint(sequence) entries   (a nested bucket)
//	          then 0
//	bytes(b) = uvarint(len(b)) b
//
// Values are written as they are stored: the JSON form base64-encoded
// every value, which cost a quarter of a replay's CPU (the whole snapshot
// built in one buffer, then compressed) and compressed worse.
const snapMagic = "jocasta snapshot v2\n"

const (
	snapEnd    = 0
	snapValue  = 1
	snapNested = 2
	// maxSnapField bounds one key, value or header: a corrupt length
	// must not allocate without limit. bbolt values of the projections
	// are far smaller.
	maxSnapField = 64 << 20
	// maxSnapDepth bounds the nesting of buckets.
	maxSnapDepth = 32
	// snapLevel is the compression level: on dumps of history rows,
	// level 3 is about 3 times as fast as the default level and within
	// 3 % of its size (BenchmarkEncodeSnapshot).
	snapLevel = 3
)

// snapHeader is the part of a snapshot beside its buckets.
type snapHeader struct {
	Seq       uint64            `json:"seq"`
	Hash      string            `json:"hash"`
	Time      time.Time         `json:"time"`
	Sequences map[string]uint64 `json:"sequences,omitempty"`
}

// encodeSnapshotTx encodes the snapshot saveSnapshot would dump from
// tx's buckets (named, each once; a missing one empty), written
// straight from the transaction's pages instead of through a []KV of
// every pair first (about 90 bytes a pair: 52 MB at the weekly snapshot
// of a 90-day history of 1,000 devices). The bytes are the same
// (TestEncodeSnapshotTxEqualsDump).
func encodeSnapshotTx(tx *bolt.Tx, seq uint64, hash string, t time.Time, buckets []string) (snapChunks, error) {
	head := snapHeader{Seq: seq, Hash: hash, Time: t.UTC()}
	var names []string
	for _, name := range buckets {
		if name == "" {
			return nil, errors.New("encode: a bucket without a name")
		}
		if slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
		if b := tx.Bucket([]byte(name)); b != nil && b.Sequence() != 0 {
			if head.Sequences == nil {
				head.Sequences = map[string]uint64{}
			}
			head.Sequences[name] = b.Sequence()
		}
	}
	return encodeSnapshotWith(head, names, func(w *snapWriter, name string) {
		if b := tx.Bucket([]byte(name)); b != nil {
			w.bucket(b, 0)
		} else if w.err == nil {
			w.err = w.w.WriteByte(snapEnd) // an empty bucket
		}
	})
}

// encodeSnapshotWith writes the header, then each bucket (in name order)
// with body, compressed.
func encodeSnapshotWith(head snapHeader, names []string, body func(w *snapWriter, name string)) (snapChunks, error) {
	var buf chunkWriter
	zw, err := gzip.NewWriterLevel(&buf, snapLevel)
	if err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	w := &snapWriter{w: bufio.NewWriterSize(zw, 64<<10)}
	w.w.WriteString(snapMagic)
	hb, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	w.bytes(hb)
	slices.Sort(names)
	for _, name := range names {
		w.bytes([]byte(name))
		body(w, name)
	}
	w.bytes(nil)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err != nil {
		return nil, fmt.Errorf("encode: %w", w.err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	return buf.chunks, nil
}

// snapChunk is the most bytes of a piece of an encoded snapshot, as it
// is built and as it is stored.
const snapChunk = 1 << 20

// snapChunks is an encoded snapshot in pieces of at most snapChunk
// bytes, in order.
type snapChunks [][]byte

// size is the encoded snapshot's length.
func (c snapChunks) size() int {
	n := 0
	for _, b := range c {
		n += len(b)
	}
	return n
}

// join is the encoded snapshot in one slice.
func (c snapChunks) join() []byte { return bytes.Join(c, nil) }

// chunkWriter collects what is written in pieces of snapChunk bytes,
// each made once at its size (the first ones smaller, for the many
// small snapshots). A bytes.Buffer doubled instead: with the copies it
// left behind and the page buffers of the commit, the weekly snapshot
// held about four times its size in the heap (BenchmarkSaveSnapshot).
type chunkWriter struct {
	chunks snapChunks
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := len(w.chunks) - 1
		if k < 0 || len(w.chunks[k]) == cap(w.chunks[k]) {
			k++
			size := snapChunk // 64, 128, 256, 512 KiB, then 1 MiB each
			if k < 4 {
				size >>= 4 - k
			}
			w.chunks = append(w.chunks, make([]byte, 0, size))
		}
		c := w.chunks[k]
		m := copy(c[len(c):cap(c)], p)
		w.chunks[k], p = c[:len(c)+m], p[m:]
	}
	return n, nil
}

type snapWriter struct {
	w   *bufio.Writer
	err error
	tmp [binary.MaxVarintLen64]byte
}

func (w *snapWriter) uvarint(v uint64) {
	if w.err == nil {
		_, w.err = w.w.Write(binary.AppendUvarint(w.tmp[:0], v))
	}
}

func (w *snapWriter) bytes(b []byte) {
	if len(b) > maxSnapField {
		if w.err == nil {
			w.err = fmt.Errorf("a key or value of %d bytes (at most %d)", len(b), maxSnapField)
		}
		return
	}
	w.uvarint(uint64(len(b)))
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// bucket writes b's pairs and nested buckets as entries writes those
// dumpBucket lists.
func (w *snapWriter) bucket(b *bolt.Bucket, depth int) {
	err := b.ForEach(func(k, v []byte) error {
		if w.err != nil {
			return w.err
		}
		var nb *bolt.Bucket
		if v == nil {
			nb = b.Bucket(k)
		}
		if nb == nil {
			w.w.WriteByte(snapValue)
			w.bytes(k)
			w.bytes(v)
			return w.err
		}
		if depth >= maxSnapDepth {
			w.err = fmt.Errorf("buckets nested deeper than %d", maxSnapDepth)
			return w.err
		}
		w.w.WriteByte(snapNested)
		w.bytes(k)
		w.uvarint(nb.Sequence())
		w.bucket(nb, depth+1)
		return w.err
	})
	if w.err == nil && err != nil {
		w.err = err
	}
	if w.err == nil {
		w.err = w.w.WriteByte(snapEnd)
	}
}

// decodeSnapshot reverses encodeSnapshotTx (or reads a snapshot of the
// first format) and checks the result.
func decodeSnapshot(data []byte) (*Snapshot, error) { return decodeSnapshotBuckets(data, anySeq, nil) }

// decodeSnapshotBuckets decodes the buckets names (nil: every bucket) of
// data, a snapshot of seq (anySeq: any): a v2 one through walkSnapshot,
// which reads the others past without a copy; one of the first format,
// gzip(JSON(snap)), whole, then keeping those.
func decodeSnapshotBuckets(data []byte, seq uint64, names []string) (*Snapshot, error) {
	v2, err := isSnapshotV2(data)
	if err != nil {
		return nil, err
	}
	if v2 {
		c := &snapCollector{names: names}
		if err := walkSnapshot(data, seq, c); err != nil {
			return nil, err
		}
		return c.snap, nil
	}
	snap, err := decodeSnapshotV1(data)
	if err != nil {
		return nil, err
	}
	if seq != anySeq && snap.Seq != seq {
		return nil, fmt.Errorf("decode: it says seq %d", snap.Seq)
	}
	for name := range snap.Buckets {
		if names != nil && !slices.Contains(names, name) {
			delete(snap.Buckets, name)
		}
	}
	return snap, nil
}

// decodeSnapshotV1 reads and checks a snapshot of the first format.
func decodeSnapshotV1(data []byte) (*Snapshot, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	snap := &Snapshot{}
	if err := json.NewDecoder(br).Decode(snap); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if !validHash(snap.Hash) {
		return nil, fmt.Errorf("decode: hash %q is not a hex SHA-256", snap.Hash)
	}
	for name, kvs := range snap.Buckets {
		if reserved(name) || name == "" {
			return nil, fmt.Errorf("decode: bucket name %q not allowed", name)
		}
		if err := checkKVs(kvs); err != nil {
			return nil, fmt.Errorf("decode: bucket %q: %w", name, err)
		}
	}
	return snap, nil
}

type snapReader struct {
	r   *bufio.Reader
	err error
}

func (d *snapReader) fail(err error) {
	if d.err == nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
	}
}

func (d *snapReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.fail(err)
	}
	return v
}

// length reads a field's length: 0 after an error, or for a length
// over maxSnapField (a corrupt one must not allocate without limit).
func (d *snapReader) length() int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > maxSnapField {
		d.fail(fmt.Errorf("a field of %d bytes (at most %d)", n, maxSnapField))
		return 0
	}
	return int(n)
}

// bytes reads one length-prefixed field; nil when empty.
func (d *snapReader) bytes() []byte {
	n := d.length()
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.fail(err)
		return nil
	}
	return b
}
