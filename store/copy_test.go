package store_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
)

// appendMany appends n small sweeps, one minute apart from at, in one call.
func appendMany(t *testing.T, s *store.Store, n int, at time.Time) []events.Envelope {
	t.Helper()
	evs := make([]events.Envelope, n)
	for i := range evs {
		evs[i] = sweepEvent(t, 1, at.Add(time.Duration(i)*time.Minute))
	}
	got, err := s.Append(t.Context(), evs...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCopyLogChunks copies logs longer than one copy chunk (1,024
// events), whole and cut by time inside a later chunk, with CopyLog and
// CopyLogFunc.
func TestCopyLogChunks(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := storetest.OpenWith(t, store.Options{NoSync: true})
	stored := appendMany(t, src, 2500, base)
	for _, c := range []struct {
		name  string
		until time.Time
		want  uint64
	}{
		{"everything", time.Time{}, 2500},
		{"cut at a chunk boundary", base.Add(2047 * time.Minute), 2048},
		{"cut inside the third chunk", base.Add(2099 * time.Minute), 2100},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := storetest.OpenWith(t, store.Options{NoSync: true})
			n, err := src.CopyLog(dst, c.until)
			if err != nil {
				t.Fatal(err)
			}
			if n != c.want || dst.Head() != c.want {
				t.Fatalf("copied %d, head %d, want %d", n, dst.Head(), c.want)
			}
			// CopyLogFunc copies the same and hands over every event.
			dst2 := storetest.OpenWith(t, store.Options{NoSync: true})
			var handed []events.Envelope
			n, err = src.CopyLogFunc(dst2, c.until, func(evs []events.Envelope) error {
				if len(evs) == 0 || len(evs) > 8192 || dst2.Head() >= evs[0].Seq {
					t.Errorf("handed %d events from seq %d with dst head %d", len(evs), evs[0].Seq, dst2.Head())
				}
				handed = append(handed, evs...)
				return nil
			})
			if err != nil || n != c.want || dst2.Head() != c.want {
				t.Fatalf("CopyLogFunc copied %d, head %d, %v; want %d", n, dst2.Head(), err, c.want)
			}
			if !reflect.DeepEqual(handed, stored[:c.want]) {
				t.Errorf("CopyLogFunc handed %d events, not the %d stored", len(handed), c.want)
			}
			got, err := dst.Read(1, 3000)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != int(c.want) {
				t.Fatalf("read %d events back, want %d", len(got), c.want)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], stored[i]) {
					t.Fatalf("event %d: copied %+v, want %+v", i+1, got[i], stored[i])
				}
			}
			if rep, err := dst.Verify(t.Context(), nil); err != nil || !rep.OK {
				t.Fatalf("dst verify: %+v %v", rep, err)
			}
			if next, err := dst.Append(t.Context(), tokenEvent(t, "next")); err != nil || next[0].Seq != c.want+1 || next[0].PrevHash != stored[c.want-1].Hash {
				t.Fatalf("append after the copy: %+v %v", next, err)
			}
		})
	}
}

// TestCopyLogRefusesDamage: a broken link or a stored value that does
// not decode stops the copy with ErrCorrupt naming where.
func TestCopyLogRefusesDamage(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		damage func(v []byte) []byte
		want   string
	}{
		{"broken link", func(v []byte) []byte {
			i := bytes.Index(v, []byte(`"prev_hash":"`)) + len(`"prev_hash":"`)
			v[i] ^= 1
			return v
		}, "chain broken at seq 1500"},
		{"payload not JSON", func(v []byte) []byte {
			return bytes.Replace(v, []byte(`"payload":{`), []byte(`"payload":{,`), 1)
		}, "seq 00000000000005dc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "src.db")
			src, err := store.Open(path, store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			appendMany(t, src, 2000, base)
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				lb := tx.Bucket([]byte(store.BucketLog))
				k := []byte{0, 0, 0, 0, 0, 0, 0x05, 0xdc} // seq 1500
				return lb.Put(k, c.damage(bytes.Clone(lb.Get(k))))
			})
			src, err = store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst := storetest.OpenWith(t, store.Options{NoSync: true})
			n, err := src.CopyLog(dst, time.Time{})
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CopyLog = %d, %v; want ErrCorrupt mentioning %q", n, err, c.want)
			}
			if dst.Head() >= 1500 {
				t.Errorf("dst head %d: the damaged event was copied", dst.Head())
			}
		})
	}
}

// TestCopyLogFuncStops: an error from fn ends the copy before the
// transaction holding those events commits, and comes back as is.
func TestCopyLogFuncStops(t *testing.T) {
	src := storetest.OpenWith(t, store.Options{NoSync: true})
	appendMany(t, src, 40000, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dst := storetest.OpenWith(t, store.Options{NoSync: true})
	stop := errors.New("enough")
	calls := 0
	n, err := src.CopyLogFunc(dst, time.Time{}, func(evs []events.Envelope) error {
		calls++
		if evs[0].Seq > 32768 { // in the second transaction
			return stop
		}
		return nil
	})
	if err != stop || calls != 5 || n != 32768 || dst.Head() != 32768 {
		t.Fatalf("CopyLogFunc = %d, %v after %d calls (dst head %d); want 32768, the error of fn, 5 calls", n, err, calls, dst.Head())
	}
	if rep, err := dst.Verify(t.Context(), nil); err != nil || !rep.OK {
		t.Fatalf("dst verify: %+v %v", rep, err)
	}
}

// TestCopyLogFuncBytes: parts and transactions of CopyLogFunc also end
// at their byte bounds, so a log of large events is handed over and
// written a few megabytes at a time; nothing is lost, skipped or
// reordered, and the copy verifies.
func TestCopyLogFuncBytes(t *testing.T) {
	defer store.SetCopyByteBounds(64<<10, 256<<10)()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := storetest.OpenWith(t, store.Options{NoSync: true})
	stored := appendMany(t, src, 3000, base)
	for _, until := range []time.Time{{}, base.Add(2222 * time.Minute)} {
		dst := storetest.OpenWith(t, store.Options{NoSync: true})
		var seqs []uint64
		biggest := 0
		n, err := src.CopyLogFunc(dst, until, func(evs []events.Envelope) error {
			biggest = max(biggest, len(evs))
			for _, e := range evs {
				seqs = append(seqs, e.Seq)
			}
			return nil
		})
		want := uint64(len(stored))
		if !until.IsZero() {
			want = 2223
		}
		if err != nil || n != want || dst.Head() != want || uint64(len(seqs)) != want {
			t.Fatalf("until %v: copied %d (%v), head %d, handed %d; want %d", until, n, err, dst.Head(), len(seqs), want)
		}
		for k, s := range seqs {
			if s != uint64(k+1) {
				t.Fatalf("until %v: event %d handed is seq %d", until, k, s)
			}
		}
		// A stored sweep is a few hundred bytes: 64 KiB holds a few
		// hundred of them, far fewer than the 8,192 of a part by count.
		if biggest >= 1000 {
			t.Errorf("until %v: a part of %d events, over its 64 KiB", until, biggest)
		}
		if rep, err := dst.Verify(t.Context(), nil); err != nil || !rep.OK {
			t.Fatalf("dst verify: %+v %v", rep, err)
		}
	}
}
