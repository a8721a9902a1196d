package traffic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// chunkWindows are two windows of one hour: 40 local addresses with 130
// peers each (past TopPeers, so rows fold by country), the second adding
// to the first's rows; sorted by source as the listener writes them, or
// not.
func chunkWindows(sorted bool) []events.Envelope {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var evs []events.Envelope
	for w := range 2 {
		var rows []events.TrafficRow
		for d := range 40 {
			for p := range 130 {
				if (p+w)%3 == 0 && w == 1 {
					continue // the second window: some peers again, some new
				}
				local := netip.AddrFrom4([4]byte{10, 0, byte(d / 250), byte(d%250 + 1)})
				peer := netip.AddrFrom4([4]byte{byte(8 + p%3), byte(w), byte(p), 8})
				r := events.TrafficRow{Src: local.String(), Dst: peer.String(), Proto: 6, Port: 443, Bytes: uint64(100 + p*d + w), Packets: 2, Flows: 1}
				if p%4 == 0 {
					r.Src, r.Dst = r.Dst, r.Src // some in, some out
				}
				rows = append(rows, r)
			}
		}
		slices.SortFunc(rows, func(a, b events.TrafficRow) int {
			c := netip.MustParseAddr(a.Src).Compare(netip.MustParseAddr(b.Src))
			if !sorted {
				c = -c
			}
			if c != 0 {
				return c
			}
			return netip.MustParseAddr(a.Dst).Compare(netip.MustParseAddr(b.Dst))
		})
		end := at.Add(time.Duration(w*20+5) * time.Minute)
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{ScanID: "w", Started: end.Add(-time.Minute), Finished: end, Complete: true, Rows: rows}, end)
		e.Seq, e.Source = uint64(w+1), "flowlistener:gw"
		evs = append(evs, e)
	}
	return evs
}

// chunkDB is a fresh database with the buckets of a projection that
// knows no device.
func chunkDB(t *testing.T) (*Projection, *bolt.DB) {
	t.Helper()
	p, err := New(Options{Addresses: noAddresses{}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range p.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return p.Load(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, db
}

// dumpBuckets lists every key and value of the projection's buckets.
func dumpBuckets(t *testing.T, db *bolt.DB) []string {
	t.Helper()
	var out []string
	err := db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{BucketHours, BucketSources} {
			err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
				out = append(out, fmt.Sprintf("%s %x %x", name, k, v))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setChunks(t *testing.T, bytes, sides int) {
	oldB, oldS := chunkBytes, chunkSides
	chunkBytes, chunkSides = bytes, sides
	t.Cleanup(func() { chunkBytes, chunkSides, chunkHook = oldB, oldS, func(walkPos) error { return nil } })
}

// A window written in parts (as the runner does with a Chunker) leaves
// exactly the rows it leaves written in one transaction, sorted by
// source or not, and after a failure between parts resumes without
// writing a row twice.
func TestWindowInPartsEqualsWhole(t *testing.T) {
	for _, sorted := range []bool{true, false} {
		t.Run(fmt.Sprintf("sorted=%v", sorted), func(t *testing.T) {
			evs := chunkWindows(sorted)
			whole, wdb := chunkDB(t)
			for _, e := range evs {
				if err := wdb.Update(func(tx *bolt.Tx) error { return whole.Apply(tx, e) }); err != nil {
					t.Fatal(err)
				}
			}
			want := dumpBuckets(t, wdb)
			if len(want) < 40*100 {
				t.Fatalf("only %d rows: the windows do not exercise anything", len(want))
			}

			setChunks(t, 0, 500)
			parts := 0
			failAt := 3
			chunkHook = func(walkPos) error {
				if parts++; parts == failAt {
					return errors.New("injected failure")
				}
				return nil
			}
			p, db := chunkDB(t)
			for _, e := range evs {
				if !p.Chunked(e) {
					t.Fatal("not chunked at chunkBytes 0")
				}
				err := p.ApplyChunks(context.Background(), db, e)
				if e.Seq == 1 {
					// The third part failed: two are written, and the
					// progress says so.
					if err == nil {
						t.Fatal("the injected failure was lost")
					}
					var pr progress
					_ = db.View(func(tx *bolt.Tx) error { pr, err = readProgress(tx, 1); return err })
					if pr.Pos == (walkPos{}) {
						t.Fatalf("no progress recorded after two parts: %+v", pr)
					}
					if err := p.ApplyChunks(context.Background(), db, e); err != nil { // resumed
						t.Fatal(err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
					t.Fatal(err)
				}
			}
			if parts < 10 {
				t.Fatalf("%d parts: the windows were not written in parts", parts)
			}
			got := dumpBuckets(t, db)
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("%d rows in parts, %d whole; first difference at %d:\n%s\n%s", len(got), len(want), i, got[i], want[i])
					}
				}
				t.Fatalf("%d rows in parts, %d whole", len(got), len(want))
			}
			if err := db.View(func(tx *bolt.Tx) error {
				if tx.Bucket(bSources).Get(progressKey) != nil {
					return errors.New("the progress outlived its window")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// A reload does not take the progress key for a listener.
			for src := range p.sources {
				if bytes.HasPrefix([]byte(src), progressKey[:1]) {
					t.Fatalf("source %q", src)
				}
			}
		})
	}
}

// A shutdown during a window in parts stops between two parts; the next
// start writes the rest.
func TestWindowInPartsStopsOnShutdown(t *testing.T) {
	evs := chunkWindows(true)
	whole, wdb := chunkDB(t)
	for _, e := range evs {
		if err := wdb.Update(func(tx *bolt.Tx) error { return whole.Apply(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	setChunks(t, 0, 500)
	ctx, cancel := context.WithCancel(context.Background())
	parts := 0
	chunkHook = func(walkPos) error {
		if parts++; parts == 2 {
			cancel() // SIGTERM while the second part is written
		}
		return nil
	}
	p, db := chunkDB(t)
	if err := p.ApplyChunks(ctx, db, evs[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("ApplyChunks after the shutdown: %v", err)
	}
	if parts != 2 {
		t.Fatalf("%d parts written after the shutdown began, want 2 (the one under way)", parts)
	}
	for _, e := range evs {
		if err := p.ApplyChunks(context.Background(), db, e); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := dumpBuckets(t, db), dumpBuckets(t, wdb); !slices.Equal(got, want) {
		t.Fatalf("%d rows after a stop and a resume, %d written at once", len(got), len(want))
	}
}

// countingDB is a bbolt file that counts the parts committed.
type countingDB struct {
	*bolt.DB
	commits int
}

func (d *countingDB) Update(fn func(*bolt.Tx) error) error {
	err := d.DB.Update(fn)
	if err == nil {
		d.commits++
	}
	return err
}

// A window written in parts releases the mapped pages in every part,
// inside its transaction, not only when serve's timer comes.
func TestWindowInPartsReleasesPages(t *testing.T) {
	evs := chunkWindows(true)
	setChunks(t, 0, 500)
	setReleaseSeeks(t, math.MaxInt) // only the parts' own releases
	p, bdb := chunkDB(t)
	db := &countingDB{DB: bdb}
	var releases []int // parts committed before each release
	p.opts.ReleaseMapped = func(tx *bolt.Tx) error {
		if !tx.Writable() || tx.DB() != bdb {
			t.Error("released outside the part's transaction")
		}
		releases = append(releases, db.commits)
		return errors.New("ignored: memory only")
	}
	if err := p.ApplyChunks(context.Background(), db, evs[0]); err != nil {
		t.Fatal(err)
	}
	if db.commits < 5 {
		t.Fatalf("%d parts: the window was not written in parts", db.commits)
	}
	want := make([]int, db.commits)
	for i := range want {
		want[i] = i // in the part after i committed ones
	}
	if !slices.Equal(releases, want) {
		t.Fatalf("released in parts %v, want in each of %d", releases, db.commits)
	}
}

func setReleaseSeeks(t *testing.T, n int) {
	old := releaseSeeks
	releaseSeeks = n
	t.Cleanup(func() { releaseSeeks = old })
}

// A window whose addresses have rows in earlier minutes of the hour
// releases the mapped pages every releaseSeeks seeks into them, inside
// the transaction it is written in, whole (one transaction) or in parts:
// a single part may read most of the hour.
func TestWindowReleasesPagesBetweenSeeks(t *testing.T) {
	tests := []struct {
		parts    bool
		seeks    int
		min, max int // releases
	}{
		{false, math.MaxInt, 0, 0},
		{true, math.MaxInt, 1, 1}, // the part's own, at its end
		// About 170 groups (the 40 local addresses and the peers, by
		// their local end), two seeks each (the first window's minute
		// and this one's): about 34 releases.
		{false, 10, 30, 40},
		{true, 10, 31, 41},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("parts=%v,seeks=%d", tc.parts, tc.seeks), func(t *testing.T) {
			evs := chunkWindows(true)
			if tc.parts {
				setChunks(t, 0, 1<<30) // one part: every side of the window
			}
			setReleaseSeeks(t, tc.seeks)
			p, bdb := chunkDB(t)
			if err := bdb.Update(func(tx *bolt.Tx) error { return p.Apply(tx, evs[0]) }); err != nil {
				t.Fatal(err)
			}
			releases, outside := 0, 0
			var first *bolt.Tx
			p.opts.ReleaseMapped = func(tx *bolt.Tx) error {
				if first == nil {
					first = tx
				}
				if !tx.Writable() || tx != first {
					outside++
				}
				releases++
				return errors.New("ignored: memory only")
			}
			if tc.parts {
				if err := p.ApplyChunks(context.Background(), bdb, evs[1]); err != nil {
					t.Fatal(err)
				}
			} else if err := bdb.Update(func(tx *bolt.Tx) error { return p.Apply(tx, evs[1]) }); err != nil {
				t.Fatal(err)
			}
			if outside != 0 || releases < tc.min || releases > tc.max {
				t.Fatalf("%d releases (%d outside the window's one transaction), want %d to %d", releases, outside, tc.min, tc.max)
			}
		})
	}
}

// Overview, which reads every row of its range, releases the mapped
// pages every releaseRows rows, inside its own read transaction.
func TestOverviewReleasesPages(t *testing.T) {
	p, db := chunkDB(t)
	for _, e := range chunkWindows(true) {
		if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	rows := 0
	_ = db.View(func(tx *bolt.Tx) error { rows = tx.Bucket(bHours).Stats().KeyN; return nil })
	old := releaseRows
	releaseRows = 100
	t.Cleanup(func() { releaseRows = old })
	calls := 0
	p.opts.ReleaseMapped = func(tx *bolt.Tx) error {
		if tx.Writable() || tx.DB() != db {
			t.Error("released outside the read's own transaction")
		}
		calls++
		return errors.New("ignored: memory only")
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	if _, err := p.Overview(context.Background(), at, at.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	if rows < 1000 || calls != rows/100 {
		t.Fatalf("%d releases over %d rows, want one per 100", calls, rows)
	}
}
