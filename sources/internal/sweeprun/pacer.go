package sweeprun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"
)

// Back-pressure: when a send fails with ENOBUFS or EAGAIN it is sent again
// after a pause that doubles from BackoffMin to BackoffMax; after
// GiveUpAfter of pauses for one send, it is dropped and counted.
const (
	BackoffMin  = time.Millisecond
	BackoffMax  = 64 * time.Millisecond
	GiveUpAfter = 5 * time.Second
	// MaxRoundGap: a round starts at least min(Wait, MaxRoundGap) after
	// the previous one, so that a small network's addresses have time to
	// answer before they are asked again.
	MaxRoundGap = time.Second
)

// Pacer paces one sweep. Make it with [NewPacer]; [Pacer.Start] before the
// first send, [Pacer.Stop] after the last.
type Pacer struct {
	lim   *rate.Limiter
	batch int // tokens taken at once
	avail int
	timer *time.Timer

	// Dropped counts sends given up after back-pressure; Retries the
	// sends that met it and were sent again.
	Dropped, Retries int
	// GiveUp is how long one send may meet back-pressure before it is
	// dropped: GiveUpAfter; tests shorten it.
	GiveUp time.Duration

	// probed is the number of distinct addresses walked, known once the
	// first round is over (-1 before); answered counts distinct
	// responders. When they meet, allDone closes.
	probed   atomic.Int64
	answered atomic.Int64
	allDone  chan struct{}
	doneOnce sync.Once
}

// NewPacer returns a pacer for at most rate sends per second (rate ≥ 1).
func NewPacer(rate int) *Pacer {
	p := &Pacer{GiveUp: GiveUpAfter, allDone: make(chan struct{})}
	p.init(rate)
	return p
}

func (p *Pacer) init(r int) {
	batch, burst := BurstFor(r)
	p.lim = rate.NewLimiter(rate.Limit(r), burst)
	p.batch = batch
	p.probed.Store(-1)
}

// BurstFor returns the pacing steps for a rate: the sender takes batch
// tokens at a time (about 4ms of sends, 1 to 64), so it sleeps in steps a
// timer keeps; the bucket holds up to burst tokens (up to four batches,
// at most 2% of a second's sends), so a timer that fires late is made up
// for without ever sending more than rate + burst in a second.
func BurstFor(rate int) (batch, burst int) {
	batch = min(max(rate/250, 1), 64)
	burst = max(batch, min(4*batch, rate/50))
	return batch, burst
}

// Start readies the pacer's timer.
func (p *Pacer) Start() {
	p.timer = time.NewTimer(time.Hour)
	p.timer.Stop()
}

// Stop stops the pacer's timer.
func (p *Pacer) Stop() { p.timer.Stop() }

// Take waits for one token. Tokens come from the limiter a batch at a
// time, so it is consulted once per batch and nothing is allocated. The
// limiter's bucket holds a few batches: what a late timer wake-up costs
// is made up at once instead of being lost to the bucket's cap.
func (p *Pacer) Take(ctx context.Context) error {
	if p.avail > 0 { // inlined: the limiter is consulted once per batch
		p.avail--
		return nil
	}
	return p.refill(ctx)
}

// refill waits until a batch of tokens is in the bucket and takes them
// all but the one Take hands out.
func (p *Pacer) refill(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		tokens := p.lim.TokensAt(now)
		if n := min(int(tokens), p.lim.Burst()); n >= p.batch && p.lim.AllowN(now, n) {
			p.avail = n - 1
			return nil
		}
		missing := float64(p.batch) - tokens
		d := max(time.Duration(missing/float64(p.lim.Limit())*float64(time.Second)), 20*time.Microsecond)
		if err := p.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// Refund gives back the token of a send that never left.
func (p *Pacer) Refund() { p.avail++ }

// Sleep waits d, or until ctx ends.
func (p *Pacer) Sleep(ctx context.Context, d time.Duration) error {
	p.timer.Reset(d)
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	case <-p.timer.C:
		return nil
	}
}

// Backoff is the back-pressure state of one send; the zero value is
// ready for the first attempt.
type Backoff struct {
	pause, waited time.Duration
}

// Retry decides about a send that failed with err. On back-pressure
// (ENOBUFS, EAGAIN) it pauses, doubling from BackoffMin to BackoffMax,
// and reports again: send once more. Otherwise again is false and the
// error is: nil when the send is dropped after GiveUp of pauses (counted
// in Dropped), ctx.Err() when ctx ends during the pause, and err itself
// for any other error.
func (p *Pacer) Retry(ctx context.Context, b *Backoff, err error) (again bool, _ error) {
	if !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EAGAIN) {
		return false, err
	}
	if b.waited >= p.GiveUp {
		p.Dropped++
		return false, nil
	}
	p.Retries++
	if b.pause == 0 {
		b.pause = BackoffMin
	}
	if err := p.Sleep(ctx, b.pause); err != nil {
		return false, err
	}
	b.waited += b.pause
	b.pause = min(2*b.pause, BackoffMax)
	return true, nil
}

// WaitFor waits d, or until every address answered, or ctx ends.
func (p *Pacer) WaitFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	p.timer.Reset(d)
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	case <-p.allDone:
		p.timer.Stop()
		return nil
	case <-p.timer.C:
		return nil
	}
}

// Finished reports whether every address walked in the first round has
// answered.
func (p *Pacer) Finished() bool {
	select {
	case <-p.allDone:
		return true
	default:
		return false
	}
}

// Answered counts a new responder (once per address). It is safe for
// concurrent use.
func (p *Pacer) Answered() {
	p.answered.Add(1)
	p.checkDone()
}

func (p *Pacer) checkDone() {
	if n := p.probed.Load(); n >= 0 && p.answered.Load() >= n {
		p.doneOnce.Do(func() { close(p.allDone) })
	}
}

// Rounds runs round(r) for r in [0, rounds). A round after the first
// starts only while some address has not answered, and at least
// min(wait, MaxRoundGap) after the previous round started. round returns
// the number of distinct addresses it walked; the first round's count is
// the number [Pacer.Answered] must reach for the sweep to be finished.
func (p *Pacer) Rounds(ctx context.Context, rounds int, wait time.Duration, round func(r int) (walked int64, err error)) error {
	gap := min(wait, MaxRoundGap)
	var roundStart time.Time
	for r := range rounds {
		if r > 0 {
			if p.Finished() {
				return nil
			}
			if d := time.Until(roundStart.Add(gap)); d > 0 {
				if err := p.WaitFor(ctx, d); err != nil {
					return err
				}
				if p.Finished() {
					return nil
				}
			}
		}
		roundStart = time.Now()
		walked, err := round(r)
		if err != nil {
			return err
		}
		if r == 0 {
			p.probed.Store(walked)
			p.checkDone()
		}
	}
	return nil
}

// CheckParams checks a sweep's pacing parameters: at least one send
// (named by what: "probe", "request") per second, at least one round, a
// wait of 0 or more. Each problem wraps bad; all are returned at once.
func CheckParams(bad error, what string, rate, rounds int, wait time.Duration) error {
	var errs []error
	if rate < 1 {
		errs = append(errs, fmt.Errorf("%w: rate %d: want at least 1 %s per second", bad, rate, what))
	}
	if rounds < 1 {
		errs = append(errs, fmt.Errorf("%w: rounds %d: want at least 1", bad, rounds))
	}
	if wait < 0 {
		errs = append(errs, fmt.Errorf("%w: wait %v: want 0 or more", bad, wait))
	}
	return errors.Join(errs...)
}
