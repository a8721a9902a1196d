package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Every runs a job on an interval, never two at once.
type Every struct {
	// Log receives "still running, skipping tick" and the job's errors;
	// nil discards them.
	Log *slog.Logger
	// Name prefixes log lines ("source" when empty).
	Name string

	jitter func(max time.Duration) time.Duration // tests replace it
}

// RunEvery runs run at once, then every interval plus a random jitter in
// [0, jitter), until ctx ends; it returns nil then (after the run in
// progress has returned).
//
// Runs never overlap: run is called from this goroutine only. A run longer
// than the interval delays the next one to the next tick after it ends,
// and the skipped ticks are logged ("sweep still running, skipping tick").
// Errors from run are logged and do not stop the schedule. The timer waits
// in a select on ctx.Done() and is stopped on return.
func (s *Every) RunEvery(ctx context.Context, interval, jitter time.Duration, run func(ctx context.Context) error) error {
	if interval <= 0 {
		return fmt.Errorf("%w: interval %v: want more than 0", ErrConfig, interval)
	}
	if jitter < 0 {
		return fmt.Errorf("%w: jitter %v: want 0 or more", ErrConfig, jitter)
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := s.Name
	if name == "" {
		name = "source"
	}
	rnd := s.jitter
	if rnd == nil {
		rnd = func(max time.Duration) time.Duration {
			if max <= 0 {
				return 0
			}
			return rand.N(max)
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		start := time.Now()
		if err := run(ctx); err != nil && ctx.Err() == nil {
			log.Warn(name+": run failed: "+err.Error(), "source", name)
		}
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		next := start.Add(interval)
		if !next.After(now) {
			skipped := int(now.Sub(start) / interval)
			next = start.Add(time.Duration(skipped+1) * interval)
			log.Info(name+": still running, skipping tick: the run took longer than the interval", "source", name,
				"took", now.Sub(start).Round(time.Millisecond).String(), "interval", interval.String(), "skipped", skipped)
		}
		timer.Reset(next.Sub(now) + rnd(jitter))
	}
}
