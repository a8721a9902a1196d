// Package sourcetest is the conformance suite every source kind runs from
// its own package's tests, watermill-style: the kind hands over pollers
// that work, that fail and that hang, and the suite checks the contract
// of sources.Poller through the real scheduler: a poll returns promptly
// when cancelled, is cut by its instance's timeout, a failure is recorded
// as a failed scan with a reason (never silence), and nothing leaks a
// goroutine. TestListener (listener.go) is the same for sources.Listener:
// it stops on ctx, emits per window, reports a socket it cannot bind as a
// failure, and leaks nothing.
package sourcetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/scheduler"
)

// Features are the pollers of the kind under test; a nil one skips its
// part of the suite (say why in the kind's test).
type Features struct {
	// Kind is the kind's registered name.
	Kind string
	// Working completes a read (against a fake peer or a fake seam).
	Working func(t *testing.T) sources.Poller
	// Failing fails a read (its peer refuses, its socket cannot open).
	Failing func(t *testing.T) sources.Poller
	// Hanging never finishes a read by itself: it blocks until its ctx
	// ends (a peer that never answers).
	Hanging func(t *testing.T) sources.Poller
}

// bound is the generous upper limit of "promptly": the suite asserts
// that something happens, never how fast.
const bound = 20 * time.Second

// recorder is a scheduler.Sink that keeps every run.
type recorder struct {
	mu   sync.Mutex
	runs []sources.Run
	got  chan struct{}
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 100)} }

func (r *recorder) Record(_ context.Context, run sources.Run) error {
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	r.got <- struct{}{}
	return nil
}

func (r *recorder) first(t *testing.T) sources.Run {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(bound):
		t.Fatalf("nothing was recorded within %v", bound)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[0]
}

// schedule runs p as the only instance until the first run is recorded,
// then stops the scheduler and checks it returns.
func schedule(t *testing.T, kind string, p sources.Poller, timeout time.Duration) sources.Run {
	t.Helper()
	rec := newRecorder()
	s := &scheduler.Scheduler{Sink: rec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	inst := sources.Instance{Source: kind + ":conformance", Kind: kind, Interval: time.Hour, Timeout: timeout, Poller: p}
	go func() { done <- s.Run(ctx, []sources.Instance{inst}) }()
	run := rec.first(t)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("scheduler: %v", err)
		}
	case <-time.After(bound):
		t.Fatal("the scheduler did not stop after cancel")
	}
	return run
}

// TestPoller runs the suite.
func TestPoller(t *testing.T, f Features) {
	t.Run("a working read is recorded as a result", func(t *testing.T) {
		if f.Working == nil {
			t.Skip("the kind gave no working poller")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		run := schedule(t, f.Kind, f.Working(t), 0)
		if run.Result == nil {
			t.Fatalf("a working read recorded no result (err %v)", run.Err)
		}
		info := run.Result.Scan()
		if info.ID == "" || info.Started.IsZero() || info.Finished.Before(info.Started) {
			t.Fatalf("result scan facts %+v", info)
		}
	})
	t.Run("a failure is recorded as a failed scan with a reason", func(t *testing.T) {
		if f.Failing == nil {
			t.Skip("the kind gave no failing poller")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		run := schedule(t, f.Kind, f.Failing(t), 0)
		if run.Err == nil || run.Err.Error() == "" {
			t.Fatalf("a failed read was recorded without a reason: %+v", run)
		}
		if run.Result != nil && run.Result.Scan().Complete {
			t.Fatal("a failed read was recorded as complete")
		}
	})
	t.Run("a read returns promptly when cancelled", func(t *testing.T) {
		if f.Hanging == nil {
			t.Skip("the kind gave no hanging poller")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		p := f.Hanging(t)
		ctx, cancel := context.WithCancel(context.Background())
		type out struct {
			res sources.Result
			err error
		}
		done := make(chan out, 1)
		go func() { r, err := p.Poll(ctx); done <- out{r, err} }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case o := <-done:
			if o.err == nil && (o.res == nil || o.res.Scan().Complete) {
				t.Fatalf("a cancelled read returned %+v with no error and was not marked incomplete", o.res)
			}
		case <-time.After(bound):
			t.Fatal("the read did not return after cancel")
		}
	})
	t.Run("a read is cut by its timeout and recorded", func(t *testing.T) {
		if f.Hanging == nil {
			t.Skip("the kind gave no hanging poller")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		run := schedule(t, f.Kind, f.Hanging(t), 100*time.Millisecond)
		switch {
		case run.Result == nil && run.Err == nil:
			t.Fatal("the timed-out read was recorded with neither result nor reason")
		case run.Result != nil && run.Result.Scan().Complete:
			t.Fatal("a read cut by its timeout was recorded as complete")
		}
	})
}
