package sweeptest

import (
	"os"
	"sync"
	"time"
)

// Queue is the receive side of a fake socket: what the fake's send
// queues, Recv hands out, and a read deadline ends a blocked Recv the way
// it ends a read on an os.File. Writes never block, so the write deadline
// is ignored. Embed it to give a fake SetReadDeadline and
// SetWriteDeadline.
type Queue[T any] struct {
	q    chan T
	mu   sync.Mutex
	rdl  time.Time
	wake chan struct{}
}

// NewQueue returns a queue that holds up to size items.
func NewQueue[T any](size int) *Queue[T] {
	return &Queue[T]{q: make(chan T, size), wake: make(chan struct{})}
}

// Put queues v; it blocks while the queue is full.
func (q *Queue[T]) Put(v T) { q.q <- v }

// Recv returns the next item, waiting for one; it returns
// os.ErrDeadlineExceeded once the read deadline has passed.
func (q *Queue[T]) Recv() (T, error) {
	var zero T
	for {
		q.mu.Lock()
		dl, wake := q.rdl, q.wake
		q.mu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return zero, os.ErrDeadlineExceeded
			}
			tm := time.NewTimer(d)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case v := <-q.q:
			return v, nil
		case <-timeout:
			return zero, os.ErrDeadlineExceeded
		case <-wake:
		}
	}
}

// SetReadDeadline sets the read deadline and wakes a blocked Recv to
// look at it.
func (q *Queue[T]) SetReadDeadline(t time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rdl = t
	close(q.wake)
	q.wake = make(chan struct{})
	return nil
}

// SetWriteDeadline does nothing: sends to a fake never block.
func (q *Queue[T]) SetWriteDeadline(time.Time) error { return nil }
