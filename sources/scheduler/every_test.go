package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func (l *logBuf) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestSchedulerNeverOverlaps(t *testing.T) {
	var logs logBuf
	s := &Every{Log: logs.logger()}
	ctx, cancel := context.WithCancel(context.Background())
	var running, runs atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- s.RunEvery(ctx, 10*time.Millisecond, 0, func(ctx context.Context) error {
			if running.Add(1) != 1 {
				t.Error("two runs at once")
			}
			defer running.Add(-1)
			n := runs.Add(1)
			if n == 3 {
				cancel()
			}
			select { // longer than the interval
			case <-time.After(35 * time.Millisecond):
			case <-ctx.Done():
			}
			return errors.New("boom")
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 3 {
		t.Errorf("%d runs, want 3", got)
	}
	out := logs.all()
	if !strings.Contains(out, "still running, skipping tick") || !strings.Contains(out, "run failed: boom") {
		t.Errorf("logs:\n%s", out)
	}
	if strings.Contains(out, "run failed: context canceled") {
		t.Errorf("a cancelled run was logged as a failure:\n%s", out)
	}
}

func TestSchedulerIntervalAndJitter(t *testing.T) {
	var jitters []time.Duration
	s := &Every{jitter: func(max time.Duration) time.Duration { jitters = append(jitters, max); return max / 2 }}
	ctx, cancel := context.WithCancel(context.Background())
	var starts []time.Time
	err := s.RunEvery(ctx, 20*time.Millisecond, 10*time.Millisecond, func(context.Context) error {
		starts = append(starts, time.Now())
		if len(starts) == 3 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) != 3 || len(jitters) != 2 || jitters[0] != 10*time.Millisecond {
		t.Fatalf("starts %d jitters %v", len(starts), jitters)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 25*time.Millisecond {
			t.Errorf("run %d started %v after the previous one, want ≥ interval + jitter (25ms)", i, gap)
		}
	}
}

func TestSchedulerStops(t *testing.T) {
	s := &Every{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var runs int
	if err := s.RunEvery(ctx, time.Hour, 0, func(context.Context) error { runs++; return nil }); err != nil {
		t.Fatal(err)
	}
	if runs > 1 {
		t.Errorf("%d runs after cancel", runs)
	}
	for _, bad := range []struct{ iv, j time.Duration }{{0, 0}, {-time.Second, 0}, {time.Second, -1}} {
		if err := s.RunEvery(context.Background(), bad.iv, bad.j, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("RunEvery(%v, %v) = %v", bad.iv, bad.j, err)
		}
	}
}
