package sourcetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/scheduler"
)

// ListenerFeatures are the listeners of the kind under test; a nil one
// skips its part of the suite (say why in the kind's test).
type ListenerFeatures struct {
	// Kind is the kind's registered name.
	Kind string
	// Working returns a listener with a short window (well under a
	// second) that can bind, and feed, which makes it receive input
	// (sends it datagrams, say) once it is bound; feed may be called
	// more than once and must not block for long. ctx ends when the
	// listener is stopped.
	Working func(t *testing.T) (l sources.Listener, feed func(ctx context.Context, t *testing.T))
	// Unbindable returns a listener whose socket cannot bind (its
	// address is taken, or not an address of this host).
	Unbindable func(t *testing.T) sources.Listener
}

// TestListener runs the listener suite: Listen returns nil promptly when
// its ctx ends and never emits after it returns; input becomes one
// result per window, each window after the one before; a socket that
// cannot bind is recorded as a failure with a reason, not silence; and
// nothing leaks a goroutine.
func TestListener(t *testing.T, f ListenerFeatures) {
	t.Run("returns when its context ends and never emits after", func(t *testing.T) {
		if f.Working == nil {
			t.Skip("the kind gave no working listener")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		l, feed := f.Working(t)
		ctx, cancel := context.WithCancel(context.Background())
		var returned atomic.Bool
		var late atomic.Int32
		emitted := make(chan struct{}, 100)
		done := make(chan error, 1)
		go func() {
			done <- l.Listen(ctx, func(sources.Result) {
				if returned.Load() {
					late.Add(1)
				}
				select {
				case emitted <- struct{}{}:
				default:
				}
			})
			returned.Store(true)
		}()
		feed(ctx, t)
		select {
		case <-emitted:
		case <-time.After(bound):
			t.Fatalf("nothing was emitted within %v of input", bound)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a cancelled listener returned %v, want nil", err)
			}
		case <-time.After(bound):
			t.Fatal("the listener did not return after cancel")
		}
		time.Sleep(50 * time.Millisecond)
		if n := late.Load(); n > 0 {
			t.Fatalf("the listener emitted %d results after Listen returned", n)
		}
	})
	t.Run("input is recorded once per window", func(t *testing.T) {
		if f.Working == nil {
			t.Skip("the kind gave no working listener")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		l, feed := f.Working(t)
		rec := newRecorder()
		s := &scheduler.Scheduler{Sink: rec}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		inst := sources.Instance{Source: f.Kind + ":conformance", Kind: f.Kind, Listener: l}
		go func() { done <- s.Run(ctx, []sources.Instance{inst}) }()
		feed(ctx, t)
		first := rec.first(t)
		feed(ctx, t)
		second := rec.next(t, 1)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("scheduler: %v", err)
			}
		case <-time.After(bound):
			t.Fatal("the scheduler did not stop after cancel")
		}
		for i, run := range []sources.Run{first, second} {
			if run.Result == nil || run.Err != nil {
				t.Fatalf("window %d: recorded %+v, want a result", i, run)
			}
			info := run.Result.Scan()
			if info.ID == "" || info.Started.IsZero() || info.Finished.Before(info.Started) {
				t.Fatalf("window %d: scan facts %+v", i, info)
			}
		}
		a, b := first.Result.Scan(), second.Result.Scan()
		if a.ID == b.ID || b.Started.Before(a.Finished) {
			t.Fatalf("the second window %+v does not follow the first %+v", b, a)
		}
	})
	t.Run("a socket that cannot bind is recorded as a failure", func(t *testing.T) {
		if f.Unbindable == nil {
			t.Skip("the kind gave no unbindable listener")
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		// Listen itself fails at once, without waiting for its ctx.
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		var emits atomic.Int32
		if err := f.Unbindable(t).Listen(ctx, func(sources.Result) { emits.Add(1) }); err == nil || err.Error() == "" {
			t.Fatalf("Listen on a socket that cannot bind returned %v, want an error", err)
		}
		if ctx.Err() != nil {
			t.Fatal("Listen on a socket that cannot bind waited for its context")
		}
		if n := emits.Load(); n != 0 {
			t.Fatalf("a listener that could not bind emitted %d results", n)
		}
		// Through the scheduler, the failure is recorded with its reason.
		run := scheduleListener(t, f.Kind, f.Unbindable(t))
		if run.Err == nil || run.Err.Error() == "" || run.Result != nil {
			t.Fatalf("a listener that cannot bind was recorded as %+v", run)
		}
	})
}

// next waits for the run after the first n and returns it.
func (r *recorder) next(t *testing.T, n int) sources.Run {
	t.Helper()
	deadline := time.After(bound)
	for {
		r.mu.Lock()
		if len(r.runs) > n {
			run := r.runs[n]
			r.mu.Unlock()
			return run
		}
		r.mu.Unlock()
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("only %d runs were recorded within %v", n, bound)
		}
	}
}

// scheduleListener runs l as the only instance until its first run is
// recorded, then stops the scheduler and checks it returns.
func scheduleListener(t *testing.T, kind string, l sources.Listener) sources.Run {
	t.Helper()
	rec := newRecorder()
	s := &scheduler.Scheduler{Sink: rec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, []sources.Instance{{Source: kind + ":conformance", Kind: kind, Listener: l}})
	}()
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
