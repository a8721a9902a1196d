package notify

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit. The decider and every destination's sender write the
// ledger after each batch (decisions before the first attempt, attempts
// after they were made). One bbolt transaction each means one pair of
// fsyncs each, one writer at a time: with three destinations that is four
// commits per round, and the bbolt writer lock (shared with the event
// log, store.DB()) held four times as often. The committer gathers the
// writes that wait while a commit is under way and commits them together
// in the next transaction (under load waiting groupLinger for more): no
// added delay when idle, one commit per round under load. A write
// returns only once its transaction is durable, so every guarantee of
// the ledger is the same as with one transaction each.

// maxGroup bounds the writes of one transaction.
const maxGroup = 64

// groupLinger is how long, under load (the last commit ended less than
// this long ago), a transaction waits for more writes before it commits.
// At a steady 1,000 changes/s every decision and every destination's
// attempt came one by one, each its own transaction with two fsyncs
// (about two commits per change, half the dispatcher's CPU); waiting a
// few milliseconds gathers them. Idle, a write still commits at once.
const groupLinger = 5 * time.Millisecond

// writeReq is one writer's transaction body and where its outcome goes.
type writeReq struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// committer commits the ledger writes of one Run.
type committer struct {
	// txn runs one write transaction (Options.Update).
	txn  func(func(*bolt.Tx) error) error
	reqs chan writeReq
	// commits and writes count transactions and the writes they carried.
	commits, writes atomic.Uint64
}

func newCommitter(update func(func(*bolt.Tx) error) error) *committer {
	return &committer{txn: update, reqs: make(chan writeReq, maxGroup)}
}

// update runs fn in a transaction shared with the writes waiting beside
// it and returns once that transaction committed (or fn's own error). fn
// may run twice (once in a group that failed for another write, once on
// its own): it must only write what it computed beforehand. update must
// not be called after close.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	req := writeReq{fn: fn, done: make(chan error, 1)}
	c.reqs <- req
	return <-req.done
}

// run commits until close is called and every request sent before it is
// answered.
func (c *committer) run() {
	var lastEnd time.Time
	linger := time.NewTimer(groupLinger)
	linger.Stop() // (Go 1.23 timers: Stop and Reset leave no stale tick to drain)
	for first := range c.reqs {
		group := []writeReq{first}
		var wait <-chan time.Time // nil: take only the writes already waiting
		if time.Since(lastEnd) < groupLinger {
			linger.Reset(groupLinger)
			wait = linger.C
		}
	gather:
		for len(group) < maxGroup {
			var (
				r  writeReq
				ok bool
			)
			if wait == nil {
				select {
				case r, ok = <-c.reqs:
				default:
					break gather
				}
			} else {
				select {
				case r, ok = <-c.reqs:
				case <-wait:
					break gather
				}
			}
			if !ok {
				break gather
			}
			group = append(group, r)
		}
		linger.Stop()
		c.commit(group)
		lastEnd = time.Now()
	}
}

// close stops run once the requests already sent are answered.
func (c *committer) close() { close(c.reqs) }

// commit writes group in one transaction. When one write's fn fails,
// each write is tried in a transaction of its own, so that one write's
// error is its own and the others still land; when the commit fails,
// every write gets its error.
func (c *committer) commit(group []writeReq) {
	c.commits.Add(1)
	c.writes.Add(uint64(len(group)))
	err := c.txn(func(tx *bolt.Tx) error {
		for i, r := range group {
			if err := r.fn(tx); err != nil {
				return &groupErr{i: i, err: err}
			}
		}
		return nil
	})
	if err == nil {
		for _, r := range group {
			r.done <- nil
		}
		return
	}
	var ge *groupErr
	if !errors.As(err, &ge) {
		// The commit itself failed: that is every write's outcome (the
		// store is failed and refuses the rest anyway).
		for _, r := range group {
			r.done <- err
		}
		return
	}
	if len(group) == 1 {
		group[0].done <- ge.err
		return
	}
	for _, r := range group {
		c.commits.Add(1)
		r.done <- c.txn(r.fn)
	}
}

// groupErr marks the write of a group that failed.
type groupErr struct {
	i   int
	err error
}

func (e *groupErr) Error() string { return fmt.Sprintf("write %d of the group: %v", e.i, e.err) }
func (e *groupErr) Unwrap() error { return e.err }
