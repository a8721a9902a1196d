package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// FuzzLogValue: logValue never panics on what a damaged file can hold
// under a seq (any stored value, any parts, numbered in any order, with
// parts of the next seq beside them), its errors are errStub's, and what
// it accepts is exactly the stub's length made of the seq's parts 0, 1,
// 2, ... in order. A value stored by putLogValue reads back whole.
//
// The fuzzer gives the stored value, a part plan (two bytes a part: its
// number, the seq after k's with the high bit, and its length in KiB, 0
// meaning a byte) and a fill byte; a value of size bytes made of fill
// (after a '{', as stored values are JSON objects) is stored and read
// back first.
func FuzzLogValue(f *testing.F) {
	stub := func(n uint64) []byte {
		b := make([]byte, stubLen)
		binary.BigEndian.PutUint64(b[1:], n)
		return b
	}
	f.Add(stub(largeValue), []byte{0, 128, 1, 128}, byte('x'), uint32(largeValue))
	f.Add(stub(largeValue+1), []byte{0, 128, 2, 128}, byte(0), uint32(0))
	f.Add(stub(largeValue), []byte{0, 255, 1, 255}, byte(1), uint32(largeValue+partSize+1))
	f.Add(stub(maxStoredValue+1), []byte{}, byte(2), uint32(10))
	f.Add([]byte{0, 1}, []byte{0, 0}, byte(3), uint32(0))
	f.Add([]byte(`{"seq":1}`), []byte{}, byte(4), uint32(0))
	f.Add([]byte{}, []byte{0, 1, 0, 1}, byte(5), uint32(0))

	db, err := bolt.Open(filepath.Join(f.TempDir(), "fuzz.db"), 0o600, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	errRollback := errors.New("rolled back")
	k := seqKey(7)

	f.Fuzz(func(t *testing.T, stored, plan []byte, fill byte, size uint32) {
		err := db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucket(bMeta); err != nil {
				return err
			}
			lb, err := tx.CreateBucket(bLog)
			if err != nil {
				return err
			}
			// A value stored the way the writer stores it reads back.
			if size = size % (2 * largeValue); size > 0 {
				val := bytes.Repeat([]byte{fill}, int(size))
				val[0] = '{' // as every stored value: a JSON object
				if err := putLogValue(tx, lb, seqKey(1), value{val[:size/3], val[size/3 : size/2], val[size/2:]}); err != nil {
					t.Fatalf("putLogValue of %d bytes: %v", size, err)
				}
				full, _, err := logValue(tx, seqKey(1), lb.Get(seqKey(1)))
				if err != nil {
					t.Fatalf("a stored value of %d bytes does not read back: %v", size, err)
				}
				if !bytes.Equal(full, val) {
					t.Fatalf("a stored value of %d bytes reads back as %d other bytes", size, len(full))
				}
			}

			// Parts a damaged file may hold: under k, and under the seq
			// after it (which logValue must not take for k's).
			pb, err := tx.CreateBucketIfNotExists(bLogParts)
			if err != nil {
				return err
			}
			next := seqKey(8)
			for i := 0; i+1 < len(plan) && i < 64; i += 2 {
				n := int(plan[i+1]) << 10
				if n == 0 {
					n = 1
				}
				pk := make([]byte, 12)
				copy(pk, k)
				if plan[i]&0x80 != 0 {
					copy(pk, next)
				}
				binary.BigEndian.PutUint32(pk[8:], uint32(plan[i]&0x7f))
				if err := pb.Put(pk, bytes.Repeat([]byte{fill + byte(i)}, n)); err != nil {
					return err
				}
			}
			full, owned, err := logValue(tx, k, stored)
			switch {
			case err != nil:
				if !errors.Is(err, errStub) {
					t.Fatalf("logValue's error is not errStub's: %v", err)
				}
			case !isStub(stored):
				if owned || !bytes.Equal(full, stored) {
					t.Fatalf("a value in place came back changed (owned %v)", owned)
				}
			default:
				if want := binary.BigEndian.Uint64(stored[1:]); uint64(len(full)) != want || !owned {
					t.Fatalf("a stub claiming %d bytes gave %d (owned %v)", want, len(full), owned)
				}
				var want []byte
				for i := uint32(0); pb.Get(partKey(k, i)) != nil; i++ {
					want = append(want, pb.Get(partKey(k, i))...)
				}
				if !bytes.Equal(full, want) {
					t.Fatalf("a stub's value is not its parts 0, 1, ... in order")
				}
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
	})
}

// partKey is the key of part i of the out-of-line value under seq key k.
func partKey(k []byte, i uint32) []byte {
	pk := make([]byte, 12)
	copy(pk, k)
	binary.BigEndian.PutUint32(pk[8:], i)
	return pk
}

// TestStrayPartsInChunks: the search for stray parts resumes across its
// read transactions, one value each here.
func TestStrayPartsInChunks(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "j.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	val := bytes.Repeat([]byte{'x'}, largeValue)
	val[0] = '{'
	update := func(fn func(tx *bolt.Tx) error) {
		t.Helper()
		if err := s.db.Update(fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx *bolt.Tx) error {
		for seq := uint64(1); seq <= 3; seq++ {
			if err := putLogValue(tx, tx.Bucket(bLog), seqKey(seq), value{val}); err != nil {
				return err
			}
		}
		return nil
	})
	if seq, reason, err := s.strayParts(t.Context(), 1); err != nil || reason != "" {
		t.Fatalf("three values and their parts: seq %d, %q, %v", seq, reason, err)
	}
	update(func(tx *bolt.Tx) error { return tx.Bucket(bLogParts).Put(partKey(seqKey(9), 0), []byte("x")) })
	if seq, reason, err := s.strayParts(t.Context(), 1); err != nil || seq != 9 || reason == "" {
		t.Fatalf("a part under seq 9 after three values: seq %d, %q, %v", seq, reason, err)
	}
}
