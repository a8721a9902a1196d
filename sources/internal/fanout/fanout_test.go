package fanout

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, limit int
	}{
		{"none", 0, 4},
		{"fewer than the limit", 3, 8},
		{"more than the limit", 100, 4},
		{"limit zero counts as one", 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]int{}
			Each(context.Background(), tc.n, tc.limit, func(i int) {
				mu.Lock()
				seen[i]++
				mu.Unlock()
			})
			if len(seen) != tc.n {
				t.Fatalf("called %d distinct indexes, want %d", len(seen), tc.n)
			}
			for i, c := range seen {
				if c != 1 || i < 0 || i >= tc.n {
					t.Fatalf("index %d called %d times", i, c)
				}
			}
		})
	}
}

func TestEachBoundsConcurrency(t *testing.T) {
	const limit = 3
	var cur, peak atomic.Int32
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Each(context.Background(), 20, limit, func(int) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			cur.Add(-1)
		})
	}()
	close(release)
	<-done
	if p := peak.Load(); p > limit {
		t.Fatalf("peak concurrency %d, want at most %d", p, limit)
	}
}

func TestEachStopsStartingOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	Each(ctx, 1000, 1, func(i int) {
		calls.Add(1)
		if i == 4 {
			cancel()
		}
	})
	if c := calls.Load(); c != 5 {
		t.Fatalf("%d calls after cancelling in the fifth, want 5 (no new call once ctx is done)", c)
	}
}
