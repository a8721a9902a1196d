package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// Sink takes what the sources produce. The service's sink appends one
// event per call (events/ingest).
type Sink interface {
	// Record records the outcome of one run: a result (complete, partial,
	// or with errors), or, when run.Result is nil, a failed run whose
	// reason is run.Err. It is called from one goroutine per instance at
	// a time and must return promptly once ctx is done.
	Record(ctx context.Context, run sources.Run) error
}

// Scheduler runs source instances and hands what they produce to a sink:
// each poller on its interval (plus a jitter of a twentieth of it), never
// two polls of one instance at once, each poll bounded by the instance's
// timeout; each listener until stopped.
type Scheduler struct {
	Sink Sink
	// Ready, when set, is awaited before the first poll of an instance
	// with WaitReady.
	Ready func(ctx context.Context) error
	// Log receives one line per run and every failure.
	Log *slog.Logger
	// RecordBudget bounds the append of a run's result once the
	// scheduler is stopping (a stop lets an append in flight finish).
	// Default 2s.
	RecordBudget time.Duration
}

// Check reports instances that cannot run, naming each.
func Check(insts []sources.Instance) error {
	var errs []error
	for _, in := range insts {
		switch {
		case (in.Poller == nil) == (in.Listener == nil):
			errs = append(errs, fmt.Errorf("%w: %s: set exactly one of Poller and Listener", ErrConfig, in.Source))
		case in.Poller != nil && in.Interval <= 0:
			errs = append(errs, fmt.Errorf("%w: %s: interval %v: want more than 0", ErrConfig, in.Source, in.Interval))
		case in.Timeout < 0:
			errs = append(errs, fmt.Errorf("%w: %s: timeout %v: want 0 or more", ErrConfig, in.Source, in.Timeout))
		}
	}
	return errors.Join(errs...)
}

// Run runs every instance until ctx is done, then waits for the runs in
// progress (a cut-short run is still recorded, as incomplete) and returns
// nil. It returns at once an error from Check.
func (s *Scheduler) Run(ctx context.Context, insts []sources.Instance) error {
	if err := Check(insts); err != nil {
		return err
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var wg sync.WaitGroup
	for _, in := range insts {
		ilog := log.With("source", in.Source, "kind", in.Kind)
		if in.Listener != nil {
			wg.Go(func() { s.listen(ctx, in, ilog) })
			continue
		}
		wg.Go(func() {
			if in.WaitReady && s.Ready != nil {
				if err := s.Ready(ctx); err != nil {
					return // stopped before ready
				}
			}
			e := &Every{Log: ilog, Name: in.Source}
			_ = e.RunEvery(ctx, in.Interval, in.Interval/20, func(ctx context.Context) error {
				return s.poll(ctx, in, ilog)
			})
		})
	}
	wg.Wait()
	return nil
}

// poll runs one poll of in and records it.
func (s *Scheduler) poll(ctx context.Context, in sources.Instance, log *slog.Logger) error {
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if in.Timeout > 0 {
		pctx, cancel = context.WithTimeout(ctx, in.Timeout)
	}
	log.Debug("run started")
	start := time.Now()
	res, err := in.Poller.Poll(pctx)
	timedOut := pctx.Err() != nil && ctx.Err() == nil
	cancel()
	if res == nil && err == nil {
		log.Info("nothing to do this round")
		return nil
	}
	if res == nil && ctx.Err() != nil {
		return nil // stopped before it found anything: nothing to record
	}
	if timedOut && res == nil {
		err = fmt.Errorf("timed out after %v (its timeout): %w", in.Timeout, err)
	}
	if rerr := s.record(ctx, sources.Run{Instance: in, Started: start, Finished: time.Now(), Result: res, Err: err}, log); rerr != nil {
		return rerr
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// listen runs a listener until ctx is done, recording every window.
func (s *Scheduler) listen(ctx context.Context, in sources.Instance, log *slog.Logger) {
	start := time.Now()
	err := in.Listener.Listen(ctx, func(res sources.Result) {
		if res != nil {
			info := res.Scan()
			_ = s.record(ctx, sources.Run{Instance: in, Started: info.Started, Finished: info.Finished, Result: res}, log)
		}
	})
	if err != nil && ctx.Err() == nil {
		log.Error("listener stopped", "err", err)
		_ = s.record(ctx, sources.Run{Instance: in, Started: start, Finished: time.Now(), Err: err}, log)
	}
}

// record hands one outcome to the sink: even when the scheduler is
// stopping, within RecordBudget, so a cut-short run is kept as
// incomplete.
func (s *Scheduler) record(ctx context.Context, run sources.Run, log *slog.Logger) error {
	budget := s.RecordBudget
	if budget <= 0 {
		budget = 2 * time.Second
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	if err := s.Sink.Record(actx, run); err != nil {
		log.Error("could not record the run", "err", err)
		return fmt.Errorf("%s: record: %w", run.Instance.Source, err)
	}
	took := run.Finished.Sub(run.Started).Round(time.Millisecond).String()
	if run.Result == nil {
		log.Warn("run failed; recorded as a failed scan", "reason", run.Err.Error(), "took", took)
		return nil
	}
	info := run.Result.Scan()
	log.Info("run recorded", "scan_id", info.ID, "complete", info.Complete, "errors", len(info.Errors), "took", took)
	return nil
}
