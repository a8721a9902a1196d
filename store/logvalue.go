package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A value of largeValue bytes or more (a flow window's event: megabytes)
// is stored out of line: the log holds a stub under its seq, and
// BucketLogParts holds the value in parts smaller than a page, under the
// seq and the part's number. bbolt writes a leaf page whole and never
// splits a leaf of four values or fewer, however large: stored in the
// log, a window's event shared its leaf with up to three others, and
// each append to that leaf read them all through the map and wrote them
// again (up to 14 MB on the heap and on the disk for one append). Parts
// fill a page three at a time, so no leaf holds more than a page and
// none is written again once the next parts follow. Readers of the log
// get a value whole through logValue, whichever way it is stored. Files
// with an out-of-line value are schema 2 (an older build refuses them
// rather than reading a stub as damage).
const (
	// partSize is the most bytes of a part: three parts and their keys
	// fill a 16 KiB page.
	partSize = 5000
	// stubLen is a stub's length: 0x00 (no JSON value starts with it)
	// and the value's length, 8 bytes big-endian.
	stubLen = 9
	// maxStoredValue bounds the length a stub may claim.
	maxStoredValue = 1 << 30
	// schemaOutOfLine is the schema version of a file that holds
	// out-of-line values.
	schemaOutOfLine = 2
)

// BucketLogParts holds the parts of the log's out-of-line values: key =
// the event's 8-byte seq and the part's 4-byte number, both big-endian.
const BucketLogParts = "log_parts"

var bLogParts = []byte(BucketLogParts)

// isStub reports whether a value stored in the log is the stub of an
// out-of-line value.
func isStub(v []byte) bool { return len(v) > 0 && v[0] == 0 }

// value is a log value given as the pieces it is made of (a sealed
// flow window's: the bytes before its payload, the payload where it is,
// the bytes after), stored as their concatenation.
type value [3][]byte

// size is the value's length.
func (v value) size() int { return len(v[0]) + len(v[1]) + len(v[2]) }

// slice returns the value's bytes from lo to hi: a slice of a piece when
// they lie in one, else a copy.
func (v value) slice(lo, hi int) []byte {
	off := 0
	for _, p := range v {
		if lo >= off && hi <= off+len(p) {
			return p[lo-off : hi-off : hi-off]
		}
		off += len(p)
	}
	b := make([]byte, 0, hi-lo)
	off = 0
	for _, p := range v {
		if l, h := max(lo-off, 0), min(hi-off, len(p)); l < h {
			b = append(b, p[l:h]...)
		}
		off += len(p)
	}
	return b
}

// putLogValue stores val under k in the log bucket lb of tx: in place,
// or out of line when it is large. bbolt keeps val's bytes (not a copy)
// until the commit: the caller must not change them.
func putLogValue(tx *bolt.Tx, lb *bolt.Bucket, k []byte, val value) error {
	size := val.size()
	if size < largeValue {
		return lb.Put(k, val.slice(0, size))
	}
	if size > maxStoredValue {
		return fmt.Errorf("a stored value of %d bytes (at most %d)", size, maxStoredValue)
	}
	pb, err := tx.CreateBucketIfNotExists(bLogParts)
	if err != nil {
		return fmt.Errorf("bucket %q: %w", BucketLogParts, err)
	}
	pb.FillPercent = 1 // parts only ever follow: pages packed full
	if err := raiseSchema(tx, schemaOutOfLine); err != nil {
		return err
	}
	n := (size + partSize - 1) / partSize
	keys := make([]byte, n*12)
	for i := range n {
		pk := keys[i*12 : i*12+12 : i*12+12]
		copy(pk, k)
		binary.BigEndian.PutUint32(pk[8:], uint32(i))
		if err := pb.Put(pk, val.slice(i*partSize, min((i+1)*partSize, size))); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
	}
	stub := make([]byte, stubLen)
	binary.BigEndian.PutUint64(stub[1:], uint64(size))
	return lb.Put(k, stub)
}

// raiseSchema sets the file's schema version to at least v.
func raiseSchema(tx *bolt.Tx, v uint64) error {
	meta := tx.Bucket(bMeta)
	if cur, ok := u64(meta.Get(metaSchema)); ok && cur >= v {
		return nil
	}
	return meta.Put(metaSchema, seqKey(v))
}

// errStub is wrapped by logValue's errors: a stub, or its parts, that do
// not make a value.
var errStub = errors.New("out-of-line value")

// logValue returns the value stored in the log under k as v whole:
// v itself when it is stored in place (pointing into the map, valid
// while tx is), or put back together from its parts, on the heap (owned:
// the caller may keep it). An error means damage; callers wrap it with
// ErrCorrupt.
func logValue(tx *bolt.Tx, k, v []byte) (full []byte, owned bool, err error) {
	if !isStub(v) {
		return v, false, nil
	}
	n, err := stubLength(v)
	if err != nil {
		return nil, false, err
	}
	pb := tx.Bucket(bLogParts)
	if pb == nil {
		return nil, false, fmt.Errorf("%w: bucket %q missing", errStub, BucketLogParts)
	}
	// Grown as the parts come, from at most 16 MiB: a damaged stub that
	// claims a gigabyte costs what its parts hold, not the gigabyte.
	buf := make([]byte, 0, min(n, 16<<20))
	want := uint32(0)
	c := pb.Cursor()
	for pk, pv := c.Seek(k); len(pk) == 12 && bytes.Equal(pk[:8], k); pk, pv = c.Next() {
		if got := binary.BigEndian.Uint32(pk[8:]); got != want {
			return nil, false, fmt.Errorf("%w: part %d missing (part %d follows part %d)", errStub, want, got, int64(want)-1)
		}
		if uint64(len(buf)+len(pv)) > n {
			return nil, false, fmt.Errorf("%w: parts hold more than its %d bytes", errStub, n)
		}
		buf = append(buf, pv...)
		want++
	}
	if uint64(len(buf)) != n {
		return nil, false, fmt.Errorf("%w: parts hold %d of its %d bytes", errStub, len(buf), n)
	}
	return buf, true, nil
}

// stubLength is the length of the value a stub stands for.
func stubLength(v []byte) (uint64, error) {
	if len(v) != stubLen {
		return 0, fmt.Errorf("%w: a stub of %d bytes", errStub, len(v))
	}
	n := binary.BigEndian.Uint64(v[1:])
	if n < largeValue || n > maxStoredValue {
		return 0, fmt.Errorf("%w: a stub claims %d bytes", errStub, n)
	}
	return n, nil
}

// firstPart returns the first part of the out-of-line value whose stub
// is stored under k, and the value's length, in tx.
func firstPart(tx *bolt.Tx, k, stub []byte) ([]byte, uint64, error) {
	n, err := stubLength(stub)
	if err != nil {
		return nil, 0, err
	}
	pb := tx.Bucket(bLogParts)
	if pb == nil {
		return nil, 0, fmt.Errorf("%w: bucket %q missing", errStub, BucketLogParts)
	}
	var pk [12]byte
	copy(pk[:], k)
	v := pb.Get(pk[:])
	if len(v) == 0 {
		return nil, 0, fmt.Errorf("%w: part 0 missing", errStub)
	}
	return v, n, nil
}

// deleteParts deletes the parts of the out-of-line values whose seqs
// are keys (8 bytes each), in tx.
func deleteParts(tx *bolt.Tx, keys [][]byte) error {
	pb := tx.Bucket(bLogParts)
	if pb == nil || len(keys) == 0 {
		return nil
	}
	var parts [][]byte
	c := pb.Cursor()
	for _, k := range keys {
		for pk, _ := c.Seek(k); len(pk) == 12 && bytes.Equal(pk[:8], k); pk, _ = c.Next() {
			parts = append(parts, bytes.Clone(pk))
		}
	}
	for _, pk := range parts {
		if err := pb.Delete(pk); err != nil {
			return fmt.Errorf("delete part %x: %w", pk, err)
		}
	}
	return nil
}
