package inventory

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// readAheadParts is how many goroutines read ahead the history rows of a
// list at an instant.
const readAheadParts = 8

// idAlphabet is the alphabet of a device id after its "d", in byte order
// (deviceID: lower-case base32).
const idAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// startReadAhead starts reading the pages a list of every device at ts
// will read (each device's row at each instant) from readAheadParts
// goroutines, each with its own read transaction over its share of the
// device ids, keeping nothing, while the caller walks the rows one
// device after the other in its own transaction. From a cold page cache
// (after a start, or after other files pushed the database out) that
// walk waited for about 2,000 random page reads one by one; with the
// read-ahead the disk serves several at a time, and the walk finds the
// later devices' pages read. With the cache warm it only repeats the
// walk's seeks, on another CPU, without decoding the rows, and stop ends
// it with the walk. One read-ahead runs at a time (its goroutines and
// transactions are bounded whatever the number of requests): a list
// that finds one running walks without.
//
// The caller starts it inside its own read transaction (after the range
// check), on that transaction's database (not through the inventory's
// lock, which an apply holds), and must call stop only after that
// transaction has ended: bbolt's remap of a growing file waits for every
// read transaction, and new read transactions wait behind it, so waiting
// for the read-ahead inside a transaction could deadlock. stop returns
// how many devices the read-ahead visited (for tests).
func (i *Inventory) startReadAhead(ctx context.Context, db *bolt.DB, ts []time.Time) (stop func() int) {
	if !i.readingAhead.CompareAndSwap(false, true) {
		return func() int { return 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	wait := runReadAhead(ctx, db, ts)
	return func() int {
		cancel()
		n := wait()
		i.readingAhead.Store(false)
		return n
	}
}

// runReadAhead starts the read-ahead's goroutines on db (the database
// of the caller's transaction); wait waits for them to finish (or ctx to
// end) and returns how many devices they visited.
func runReadAhead(ctx context.Context, db *bolt.DB, ts []time.Time) (wait func() int) {
	if db == nil || ctx.Err() != nil {
		return func() int { return 0 }
	}
	var devices atomic.Int64
	var wg sync.WaitGroup
	for k := range readAheadParts {
		var lo, hi []byte
		if k > 0 {
			lo = []byte{'d', idAlphabet[k*len(idAlphabet)/readAheadParts]}
		}
		if k < readAheadParts-1 {
			hi = []byte{'d', idAlphabet[(k+1)*len(idAlphabet)/readAheadParts]}
		}
		wg.Go(func() {
			if ctx.Err() != nil {
				return
			}
			_ = db.View(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte(bucketHistory))
				if b == nil {
					return nil
				}
				r := &histReader{b: b, c: b.Cursor()}
				devices.Add(int64(r.touchRange(ctx, lo, hi, ts)))
				return nil
			})
		})
	}
	return func() int {
		wg.Wait()
		return int(devices.Load())
	}
}

// readAheadSink keeps the bytes touchRange reads from being optimised
// away.
var readAheadSink atomic.Uint32

// touchRange reads the row of every device with an id in [lo, hi) (nil:
// unbounded) at each instant of ts, as all does, and returns how many
// devices it visited. Finding a row reads its leaf page; the first and
// last byte of each value are touched too, for a value too large for
// its leaf (kept on pages of its own).
func (r *histReader) touchRange(ctx context.Context, lo, hi []byte, ts []time.Time) int {
	var k []byte
	if lo == nil {
		k, _ = r.c.First()
	} else {
		k, _ = r.c.Seek(lo)
	}
	var id, next []byte
	var sum byte
	n := 0
	for ; k != nil && (hi == nil || bytes.Compare(k, hi) < 0); n++ {
		if n%64 == 63 && ctx.Err() != nil {
			break
		}
		kid, _, ok := splitHistKey(k)
		if !ok {
			break
		}
		id = append(id[:0], kid...)
		for _, t := range ts {
			if v, err := r.at(id, t); err == nil && len(v) > 0 {
				sum ^= v[0] ^ v[len(v)-1]
			}
		}
		next = append(append(next[:0], id...), 1)
		k, _ = r.c.Seek(next)
	}
	readAheadSink.Add(uint32(sum))
	return n
}
