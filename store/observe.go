package store

import "time"

// SetCommitObserver has f told of every commit that appended events:
// how many, and how long the write took, fsync included (for metrics).
// f runs on the writer's goroutine and must return at once. nil stops it.
func (s *Store) SetCommitObserver(f func(events int, took time.Duration)) {
	if f == nil {
		s.commitObserver.Store(nil)
		return
	}
	s.commitObserver.Store(&f)
}
