package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
	bolt "go.etcd.io/bbolt"
)

func TestAppendReadGet(t *testing.T) {
	s := storetest.Open(t)
	if s.Head() != 0 || s.First() != 1 {
		t.Fatalf("empty store: head %d first %d, want 0 and 1", s.Head(), s.First())
	}
	local := time.FixedZone("UTC+2", 2*3600)
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, local)

	withTime := sweepEvent(t, 5, at)
	noID := tokenEvent(t, "no-id")
	noID.ID = ""
	noTime := tokenEvent(t, "no-time")
	noTime.Time = time.Time{}
	before := time.Now()
	stored, err := s.Append(t.Context(), withTime, noID, noTime)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 3 {
		t.Fatalf("got %d envelopes, want 3", len(stored))
	}
	for _, c := range []struct {
		name  string
		check func(e events.Envelope) error
	}{
		{"seqs 1..3", func(events.Envelope) error {
			for i, e := range stored {
				if e.Seq != uint64(i+1) {
					return fmt.Errorf("envelope %d has seq %d", i, e.Seq)
				}
			}
			return nil
		}},
		{"time kept, in UTC", func(events.Envelope) error {
			if !stored[0].Time.Equal(at) || stored[0].Time.Location() != time.UTC {
				return fmt.Errorf("time %v, want %v in UTC", stored[0].Time, at)
			}
			return nil
		}},
		{"ID kept", func(events.Envelope) error {
			if stored[0].ID != withTime.ID {
				return fmt.Errorf("id %q, want %q", stored[0].ID, withTime.ID)
			}
			return nil
		}},
		{"ID filled", func(events.Envelope) error {
			if len(stored[1].ID) != 32 {
				return fmt.Errorf("id %q", stored[1].ID)
			}
			return nil
		}},
		{"time filled with now", func(events.Envelope) error {
			if tm := stored[2].Time; tm.Before(before.Add(-time.Second)) || tm.After(time.Now()) || tm.Location() != time.UTC {
				return fmt.Errorf("time %v", tm)
			}
			return nil
		}},
		{"chain links", func(events.Envelope) error {
			prev := events.ZeroHash
			for _, e := range stored {
				if e.PrevHash != prev {
					return fmt.Errorf("seq %d prev %s, want %s", e.Seq, e.PrevHash, prev)
				}
				if h, err := e.ComputeHash(); err != nil || h != e.Hash {
					return fmt.Errorf("seq %d hash %s, computed %s (%v)", e.Seq, e.Hash, h, err)
				}
				prev = e.Hash
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(events.Envelope{}); err != nil {
				t.Error(err)
			}
		})
	}
	if s.Head() != 3 {
		t.Errorf("Head() = %d, want 3", s.Head())
	}

	reads := []struct {
		name string
		from uint64
		max  int
		want []events.Envelope
	}{
		{"all", 1, 10, stored},
		{"from 0", 0, 10, stored},
		{"from 2", 2, 10, stored[1:]},
		{"max 2", 1, 2, stored[:2]},
		{"past head", 4, 10, nil},
	}
	for _, c := range reads {
		t.Run("read "+c.name, func(t *testing.T) {
			got, err := s.Read(c.from, c.max)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Read(%d, %d) (-want +got):\n%s", c.from, c.max, diff)
			}
		})
	}
	if _, err := s.Read(1, 0); err == nil {
		t.Error("Read with max 0 succeeded")
	}
	for _, e := range stored {
		got, err := s.Get(e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("Get(%d) (-want +got):\n%s", e.Seq, diff)
		}
	}
	if _, err := s.Get(4); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(4) err = %v, want ErrNotFound", err)
	}
	var scanned []uint64
	if err := s.Scan(t.Context(), 2, func(e events.Envelope) error { scanned = append(scanned, e.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{2, 3}, scanned); diff != "" {
		t.Errorf("Scan from 2 (-want +got):\n%s", diff)
	}
}

// TestStoredValueIsEnvelopeJSON checks the value in the log is exactly
// json.Marshal of the returned envelope.
func TestStoredValueIsEnvelopeJSON(t *testing.T) {
	s := storetest.Open(t)
	e := sweepEvent(t, 5, time.Now())
	e.Payload = json.RawMessage(`{ "html": "<a href=\"x\">&</a>", "unicode": "é\u00e9", "n": 1.50 }`)
	stored, err := s.Append(t.Context(), e, tokenEvent(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range stored {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		s.DB().View(func(tx *bolt.Tx) error {
			got = append(got, tx.Bucket([]byte(store.BucketLog)).Get(key(e.Seq))...)
			return nil
		})
		if string(got) != string(want) {
			t.Errorf("seq %d stored\n%s\nwant\n%s", e.Seq, got, want)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	s := storetest.Open(t)
	good := tokenEvent(t, "good")
	cases := []struct {
		name   string
		mutate func(e *events.Envelope)
		is     error
	}{
		{"unknown kind", func(e *events.Envelope) { e.Kind = "nope.happened" }, store.ErrUnknownKind},
		{"version 0", func(e *events.Envelope) { e.V = 0 }, events.ErrUnknownVersion},
		{"version from the future", func(e *events.Envelope) { e.V = 99 }, events.ErrUnknownVersion},
		{"payload not JSON", func(e *events.Envelope) { e.Payload = json.RawMessage(`{"a":`) }, store.ErrBadEnvelope},
		{"source not UTF-8", func(e *events.Envelope) { e.Source = "sweep:\xff" }, store.ErrBadEnvelope},
		{"payload not UTF-8", func(e *events.Envelope) { e.Payload = json.RawMessage("\"\xff\"") }, store.ErrBadEnvelope},
		{"year 10000", func(e *events.Envelope) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, store.ErrBadEnvelope},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := tokenEvent(t, "bad")
			c.mutate(&bad)
			head := s.Head()
			_, err := s.Append(t.Context(), good, bad)
			if !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want %v", err, c.is)
			}
			if s.Head() != head {
				t.Errorf("head moved from %d to %d: part of a failed call was written", head, s.Head())
			}
		})
	}
	t.Run("custom registry", func(t *testing.T) {
		reg, err := events.NewRegistry(events.KindSpec{Kind: events.KindTokenCreated, Version: 1, Payload: events.TokenCreated{}})
		if err != nil {
			t.Fatal(err)
		}
		s := storetest.OpenWith(t, store.Options{Registry: reg})
		if _, err := s.Append(t.Context(), tokenEvent(t, "ok")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(t.Context(), sweepEvent(t, 1, time.Now())); !errors.Is(err, events.ErrUnknownKind) {
			t.Fatalf("err = %v, want ErrUnknownKind", err)
		}
	})
}

func TestAppendConcurrentGapless(t *testing.T) {
	s := storetest.OpenWith(t, store.Options{NoSync: true}) // about order, not durability
	const goroutines, each = 8, 2000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := tokenEvent(t, fmt.Sprintf("g%d-%d", g, i))
				stored, err := s.Append(context.Background(), e)
				if err != nil {
					errs <- err
					return
				}
				if stored[0].ID != e.ID {
					errs <- fmt.Errorf("stored id %s, sent %s", stored[0].ID, e.ID)
					return
				}
				ids[g] = append(ids[g], e.ID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s.Head() != goroutines*each {
		t.Fatalf("head %d, want %d", s.Head(), goroutines*each)
	}
	seen := map[string]uint64{}
	var want uint64 = 1
	err := s.Scan(t.Context(), 1, func(e events.Envelope) error {
		if e.Seq != want {
			return fmt.Errorf("seq %d where %d belongs", e.Seq, want)
		}
		want++
		seen[e.ID] = e.Seq
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for g := range ids {
		for _, id := range ids[g] {
			if _, ok := seen[id]; !ok {
				t.Fatalf("id %s acknowledged but not in the log", id)
			}
		}
	}
	rep, err := s.Verify(t.Context(), nil)
	if err != nil || !rep.OK || rep.Checked != goroutines*each {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

var errNameTaken = errors.New("name taken")

// claimName is a decide function: it fails when name is already recorded
// in bucket "names", else records it and returns a token.created.
func claimName(t *testing.T, name string) func(tx *bolt.Tx) ([]events.Envelope, error) {
	return func(tx *bolt.Tx) ([]events.Envelope, error) {
		b, err := tx.CreateBucketIfNotExists([]byte("names"))
		if err != nil {
			return nil, err
		}
		if b.Get([]byte(name)) != nil {
			return nil, fmt.Errorf("%q: %w", name, errNameTaken)
		}
		if err := b.Put([]byte(name), []byte("1")); err != nil {
			return nil, err
		}
		return []events.Envelope{tokenEvent(t, name)}, nil
	}
}

func TestAppendFunc(t *testing.T) {
	s := storetest.Open(t)
	t.Run("decide sees committed state", func(t *testing.T) {
		if _, err := s.AppendFunc(t.Context(), claimName(t, "alice")); err != nil {
			t.Fatal(err)
		}
		_, err := s.AppendFunc(t.Context(), claimName(t, "alice"))
		if !errors.Is(err, errNameTaken) {
			t.Fatalf("second claim: err = %v, want errNameTaken", err)
		}
		if s.Head() != 1 {
			t.Fatalf("head %d, want 1", s.Head())
		}
	})
	t.Run("decide reads the log", func(t *testing.T) {
		var sawHead uint64
		stored, err := s.AppendFunc(t.Context(), func(tx *bolt.Tx) ([]events.Envelope, error) {
			evs, err := s.ReadTx(tx, 1, 100)
			if err != nil {
				return nil, err
			}
			sawHead = evs[len(evs)-1].Seq
			return []events.Envelope{tokenEvent(t, "reader")}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if sawHead != stored[0].Seq-1 {
			t.Errorf("decide saw head %d, its event got seq %d", sawHead, stored[0].Seq)
		}
	})
	t.Run("failing decide in a batch fails alone", func(t *testing.T) {
		// Many concurrent claims of few names: all land in shared
		// batches; exactly one claim per name may win, the losers write
		// nothing (their names rows included), the others all commit.
		const names, tries = 20, 10
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			wins   = map[string]int{}
			losses int
		)
		for i := range names * tries {
			name := fmt.Sprintf("n%d", i%names)
			wg.Go(func() {
				_, err := s.AppendFunc(context.Background(), claimName(t, name))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins[name]++
				case errors.Is(err, errNameTaken):
					losses++
				default:
					t.Errorf("claim %s: %v", name, err)
				}
			})
		}
		wg.Wait()
		for i := range names {
			if n := wins[fmt.Sprintf("n%d", i)]; n != 1 {
				t.Errorf("name n%d won %d times, want 1", i, n)
			}
		}
		if losses != names*(tries-1) {
			t.Errorf("%d losses, want %d", losses, names*(tries-1))
		}
		var rows int
		s.DB().View(func(tx *bolt.Tx) error { rows = tx.Bucket([]byte("names")).Stats().KeyN; return nil })
		if rows != names+1 { // + alice
			t.Errorf("%d name rows, want %d", rows, names+1)
		}
	})
	t.Run("bad envelope from decide", func(t *testing.T) {
		head := s.Head()
		_, err := s.AppendFunc(t.Context(), func(tx *bolt.Tx) ([]events.Envelope, error) {
			b, _ := tx.CreateBucketIfNotExists([]byte("scratch"))
			b.Put([]byte("written"), []byte("by a failing decide"))
			e := tokenEvent(t, "x")
			e.Kind = "no.such_kind"
			return []events.Envelope{e}, nil
		})
		if !errors.Is(err, store.ErrUnknownKind) {
			t.Fatalf("err = %v, want ErrUnknownKind", err)
		}
		s.DB().View(func(tx *bolt.Tx) error {
			if tx.Bucket([]byte("scratch")) != nil {
				t.Error("a failed decide's write was committed")
			}
			return nil
		})
		if s.Head() != head {
			t.Error("head moved")
		}
	})
	t.Run("panicking decide", func(t *testing.T) {
		_, err := s.AppendFunc(t.Context(), func(*bolt.Tx) ([]events.Envelope, error) { panic("boom") })
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("err = %v, want the panic as an error", err)
		}
		if _, err := s.Append(t.Context(), tokenEvent(t, "still works")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("decide with no events", func(t *testing.T) {
		head := s.Head()
		got, err := s.AppendFunc(t.Context(), func(*bolt.Tx) ([]events.Envelope, error) { return nil, nil })
		if err != nil || len(got) != 0 || s.Head() != head {
			t.Fatalf("got %v, %v, head %d→%d", got, err, head, s.Head())
		}
	})
}

func TestAppendContextAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jocasta.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Append(ctx, tokenEvent(t, "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := s.AppendFunc(ctx, claimName(t, "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
	if s.Head() != 0 {
		t.Fatalf("head %d after cancelled appends", s.Head())
	}

	// Close while appends are in flight: each either commits or gets
	// ErrClosed, and Close returns only once those that committed are
	// on disk.
	busy := make(chan struct{})
	var once sync.Once
	s.OnCommit(func(head uint64) {
		if head >= 50 {
			once.Do(func() { close(busy) })
		}
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok int
	for range 16 {
		wg.Go(func() {
			for {
				_, err := s.Append(context.Background(), tokenEvent(t, "y"))
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	<-busy
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Append", func() error { _, err := s.Append(t.Context(), tokenEvent(t, "z")); return err }},
		{"AppendFunc", func() error { _, err := s.AppendFunc(t.Context(), claimName(t, "z")); return err }},
		{"Read", func() error { _, err := s.Read(1, 1); return err }},
		{"Get", func() error { _, err := s.Get(1); return err }},
		{"Verify", func() error { _, err := s.Verify(t.Context(), nil); return err }},
		{"Compact", func() error { _, err := s.Compact(t.Context(), 1); return err }},
	} {
		t.Run(c.name+" after Close", func(t *testing.T) {
			if err := c.call(); !errors.Is(err, store.ErrClosed) {
				t.Errorf("err = %v, want ErrClosed", err)
			}
		})
	}
	s2, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Head() != uint64(ok) {
		t.Errorf("reopened head %d, but %d appends succeeded", s2.Head(), ok)
	}
}

func TestOnCommit(t *testing.T) {
	s := storetest.Open(t)
	var mu sync.Mutex
	var heads []uint64
	s.OnCommit(func(head uint64) {
		mu.Lock()
		heads = append(heads, head)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := s.Append(context.Background(), tokenEvent(t, "a"), tokenEvent(t, "b")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// A commit that appends nothing rings no hook.
	if _, err := s.AppendFunc(t.Context(), func(*bolt.Tx) ([]events.Envelope, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heads) == 0 || heads[len(heads)-1] != 100 {
		t.Fatalf("hooks saw %v, want a last head of 100", heads)
	}
	for i := 1; i < len(heads); i++ {
		if heads[i] <= heads[i-1] {
			t.Fatalf("hooks out of commit order: %v", heads)
		}
	}
}
