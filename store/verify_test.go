package store_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
	bolt "go.etcd.io/bbolt"
)

func TestVerifyClean(t *testing.T) {
	for _, n := range []int{0, 1, 2500} { // 2500 crosses read chunks
		t.Run(fmt.Sprintf("%d events", n), func(t *testing.T) {
			s := storetest.OpenWith(t, store.Options{NoSync: true})
			for i := 0; i < n; i += 100 {
				var batch []events.Envelope
				for j := i; j < min(n, i+100); j++ {
					batch = append(batch, tokenEvent(t, "t"))
				}
				if _, err := s.Append(t.Context(), batch...); err != nil {
					t.Fatal(err)
				}
			}
			var calls int
			rep, err := s.Verify(t.Context(), func(uint64) { calls++ })
			if err != nil {
				t.Fatal(err)
			}
			want := store.VerifyReport{First: 1, Head: uint64(n), Checked: uint64(n), OK: true}
			if rep != want {
				t.Errorf("report %+v, want %+v", rep, want)
			}
			if calls == 0 {
				t.Error("progress never called")
			}
		})
	}
}

// TestVerifyDamage damages event 5 of 10 in the raw file in various ways
// and expects Verify to name seq 5 (or the first seq the damage breaks).
func TestVerifyDamage(t *testing.T) {
	cases := []struct {
		name     string
		damage   func(t *testing.T, path string)
		firstBad uint64
		reason   string
	}{
		{"payload byte changed", func(t *testing.T, path string) {
			_, raw := envelopeAt(t, path, 5)
			i := bytes.Index(raw, []byte("192.168.1.1"))
			raw[i+10] = '9' // still valid JSON, different content
			putRaw(t, path, 5, raw)
		}, 5, "hash mismatch"},
		{"value garbled", func(t *testing.T, path string) {
			_, raw := envelopeAt(t, path, 5)
			raw[0] = 'X'
			putRaw(t, path, 5, raw)
		}, 5, "does not decode"},
		{"key deleted", func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Delete(key(5)) })
		}, 5, "missing"},
		{"prev_hash broken, rehashed", func(t *testing.T, path string) {
			e, _ := envelopeAt(t, path, 5)
			if err := e.Seal(strings.Repeat("0f", 32)); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(e)
			putRaw(t, path, 5, raw)
		}, 5, "prev_hash"},
		{"event moved to another key", func(t *testing.T, path string) {
			_, raw := envelopeAt(t, path, 6)
			putRaw(t, path, 5, raw)
		}, 5, "says seq 6"},
		{"field added, hash unchanged", func(t *testing.T, path string) {
			_, raw := envelopeAt(t, path, 5)
			raw = append(raw[:len(raw)-1], `,"extra":1}`...)
			putRaw(t, path, 5, raw)
		}, 5, "not the canonical encoding"},
		{"whole event rewritten and rehashed", func(t *testing.T, path string) {
			e, _ := envelopeAt(t, path, 5)
			e.Actor = "mallory"
			if err := e.Seal(e.PrevHash); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(e)
			putRaw(t, path, 5, raw)
		}, 6, "prev_hash"},
		{"first event deleted", func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Delete(key(1)) })
		}, 1, "missing"},
		{"later event copied over an earlier one", func(t *testing.T, path string) {
			_, raw := envelopeAt(t, path, 10)
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("log")).Put(key(3), raw)
			})
		}, 3, "says seq 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "jocasta.db")
			newLog(t, path, 10)
			c.damage(t, path)
			s, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer s.Close()
			rep, err := s.Verify(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.FirstBad != c.firstBad || !strings.Contains(rep.Reason, c.reason) {
				t.Errorf("report %+v, want FirstBad %d with a reason about %q", rep, c.firstBad, c.reason)
			}
			if rep.Checked != c.firstBad-1 {
				t.Errorf("checked %d, want %d", rep.Checked, c.firstBad-1)
			}
		})
	}
}

func putRaw(t *testing.T, path string, seq uint64, raw []byte) {
	t.Helper()
	rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Put(key(seq), raw) })
}

func TestVerifyCancelled(t *testing.T) {
	s := storetest.Open(t)
	appendN(t, s, 3, time.Now())
	ctx, cancel := contextCancelled(t)
	defer cancel()
	if _, err := s.Verify(ctx, nil); err == nil {
		t.Fatal("Verify with a cancelled ctx succeeded")
	}
}

// TestDamagedPageNeverCrashes garbles one page in the middle of the file:
// Open or Verify must report it; nothing may panic or fault.
func TestDamagedPageNeverCrashes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jocasta.db")
	newLog(t, path, 400)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	ps := int64(db.Info().PageSize)
	db.Close()
	for page := int64(2); page*ps < used; page++ {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			g := bytes.Clone(b)
			rand.Read(g[page*ps : (page+1)*ps])
			p := filepath.Join(t.TempDir(), "jocasta.db")
			writeFile(t, p, g)
			s, err := store.Open(p, store.Options{})
			if err != nil {
				if !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("open: %v, want ErrCorrupt", err)
				}
				t.Logf("open: %v", err)
				return
			}
			defer s.Close()
			rep, err := s.Verify(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("verify: %+v", rep)
			if rep.OK {
				// The page may have been free: then the log must read.
				if _, err := s.Read(1, 1000); err != nil {
					t.Fatalf("verify OK but read fails: %v", err)
				}
			}
		})
	}
}
