package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestHeapBudgetObserve: the limit is the lowest live heap of the window
// plus GOGC's growth over it and the runtime's overhead (or the least
// room, when more), under the ceiling; a floor older than the window
// gives way to the lowest seen after it, and a move of less than
// budgetStep is not set.
func TestHeapBudgetObserve(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	type obs struct {
		after time.Duration // since t0
		live  int64         // MiB
		limit float64       // MiB, want
		moved bool
	}
	tests := []struct {
		name    string
		ceiling int64 // MiB
		obs     []obs
	}{
		{"floor, growth and overhead", 0, []obs{{0, 20, 20 + 15 + 14.5, true}}},
		{"the least room for a small floor", 0, []obs{{0, 4, 4 + 20, true}}},
		{"a large floor", 0, []obs{{0, 100, 100 + 75 + 14.5, true}}},
		{"under the ceiling", 44, []obs{{0, 30, 44, true}, {time.Second, 10, 10 + 7.5 + 14.5, true}}},
		{"a higher live heap keeps the floor", 0, []obs{{0, 20, 49.5, true}, {time.Second, 35, 49.5, false}, {2 * time.Second, 31, 49.5, false}}},
		{"a lower one lowers it", 0, []obs{{0, 30, 30 + 22.5 + 14.5, true}, {time.Second, 19, 19 + 14.25 + 14.5, true}}},
		{"the floor ages out to the lowest seen after it", 0, []obs{
			{0, 20, 49.5, true},
			{time.Minute, 35, 49.5, false},
			{2 * time.Minute, 28, 49.5, false},
			{budgetWindow + time.Second, 33, 28 + 21 + 14.5, true}, // 20 gone: 28 is the lowest left
			{budgetWindow + 2*time.Minute + time.Second, 40, 33 + 24.75 + 14.5, true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newHeapBudget(tc.ceiling * mib)
			for k, o := range tc.obs {
				limit, moved := b.observe(t0.Add(o.after), o.live*mib)
				if limit != int64(o.limit*mib) || moved != o.moved {
					t.Fatalf("observation %d (%d MiB live): limit %.2f MiB, moved %v; want %.2f MiB, %v", k, o.live, float64(limit)/mib, moved, o.limit, o.moved)
				}
			}
		})
	}

	b := newHeapBudget(0)
	first, _ := b.observe(t0, 30*mib)
	if limit, moved := b.observe(t0.Add(time.Second), 30*mib-budgetStep/2); moved || limit != first {
		t.Errorf("half a step lower: limit %d, moved %v", limit, moved)
	}
	if limit, moved := b.observe(t0.Add(2*time.Second), 29*mib); !moved || limit != 29*mib+29*mib*3/4+budgetOverhead {
		t.Errorf("a step lower: limit %d, moved %v", limit, moved)
	}
}

// TestHeapBudgetKeep: once loaded, the runtime's soft memory limit is
// set from the live heap of the collections that follow, and keep
// returns when ctx ends.
func TestHeapBudgetKeep(t *testing.T) {
	untunedGC(t)
	untunedLimit := debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithCancel(context.Background())
	loadedCh := make(chan struct{})
	loaded := func(ctx context.Context) error {
		select {
		case <-loadedCh:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b := newHeapBudget(0)
	done := make(chan error, 1)
	go func() { done <- b.keep(ctx, loaded, 10*time.Millisecond, zerolog.Nop()) }()

	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != untunedLimit {
		t.Fatalf("limit %d before the load was done", got)
	}
	close(loadedCh)
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) == untunedLimit && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("keep did not return when ctx ended")
	}
	// keep has returned: the budget is this goroutine's to read.
	if got := debug.SetMemoryLimit(-1); got == untunedLimit || got < budgetRoom || got != b.limit {
		t.Fatalf("limit %d after collections, budget's %d", got, b.limit)
	}
}
