package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

type sinkFunc func(sources.Run)

func (f sinkFunc) Record(_ context.Context, r sources.Run) error { f(r); return nil }

type pollFunc func(ctx context.Context) (sources.Result, error)

func (f pollFunc) Poll(ctx context.Context) (sources.Result, error) { return f(ctx) }

func TestCheckRefusesBadInstances(t *testing.T) {
	p := pollFunc(func(context.Context) (sources.Result, error) { return nil, nil })
	for _, bad := range []sources.Instance{
		{Source: "neither"},
		{Source: "no interval", Poller: p},
		{Source: "negative timeout", Poller: p, Interval: time.Second, Timeout: -1},
	} {
		if err := Check([]sources.Instance{bad}); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", bad.Source, err)
		}
	}
}

// TestWaitReadyAndNothingToDo: an instance with WaitReady polls only once
// Ready returns; a poll with nothing to do records nothing.
func TestWaitReadyAndNothingToDo(t *testing.T) {
	ready := make(chan struct{})
	polled := make(chan struct{}, 10)
	var mu sync.Mutex
	var runs []sources.Run
	s := &Scheduler{
		Sink: sinkFunc(func(r sources.Run) { mu.Lock(); runs = append(runs, r); mu.Unlock() }),
		Ready: func(ctx context.Context) error {
			select {
			case <-ready:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	inst := sources.Instance{Source: "p", Kind: "portscan", Interval: time.Hour, WaitReady: true,
		Poller: pollFunc(func(context.Context) (sources.Result, error) { polled <- struct{}{}; return nil, nil })}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, []sources.Instance{inst}) }()
	select {
	case <-polled:
		t.Fatal("polled before ready")
	case <-time.After(100 * time.Millisecond):
	}
	close(ready)
	select {
	case <-polled:
	case <-time.After(20 * time.Second):
		t.Fatal("never polled after ready")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 0 {
		t.Fatalf("a poll with nothing to do recorded %+v", runs)
	}
}
