package presence

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Appender appends events to the log durably (store.Store does).
type Appender interface {
	Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error)
}

// Deadlines is what the clock reads of the inventory: the earliest time
// an online device passes the online window (inventory.Inventory).
type Deadlines interface {
	NextPresenceDeadline() (time.Time, bool)
}

// Clock is the presence clock: when an online device passes the online
// window, it appends a clock.ticked event so that the projection
// evaluates presence at that time, and a replay evaluates it at the same
// time again. It appends nothing while nothing is due.
type Clock struct {
	app  Appender
	inv  Deadlines
	now  func() time.Time
	poke chan struct{}

	// MinInterval is the least time between two checks (pokes are
	// coalesced). Default 2s.
	MinInterval time.Duration
	// MaxInterval is the most time between two checks. Default 1m.
	MaxInterval time.Duration
	// Slack is how long after a deadline the tick is appended, so that
	// devices passing the window together share one tick. Default 1s.
	Slack time.Duration
	// Log reports append failures; nil discards them.
	Log *slog.Logger

	mu       sync.Mutex
	lastTick time.Time
}

// NewClock returns a clock appending through app for inv; now is the
// wall clock (time.Now in production).
func NewClock(app Appender, inv Deadlines, now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{
		app: app, inv: inv, now: now, poke: make(chan struct{}, 1),
		MinInterval: 2 * time.Second, MaxInterval: time.Minute, Slack: time.Second,
	}
}

// Poke asks the clock to look at the deadlines again (after the
// projection applied new events). It never blocks; pokes coalesce.
func (c *Clock) Poke() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// Run checks the next presence deadline until ctx ends, appending a
// clock.ticked{At: now} once now is past it. It returns ctx's error.
func (c *Clock) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastCheck time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case <-c.poke:
			if wait := c.MinInterval - time.Since(lastCheck); wait > 0 {
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
				timer.Reset(wait)
				continue
			}
		}
		lastCheck = time.Now()
		wait := c.check(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// check appends a tick when one is due and returns how long to sleep.
func (c *Clock) check(ctx context.Context) time.Duration {
	now := c.now().UTC()
	d, ok := c.inv.NextPresenceDeadline()
	if !ok {
		return c.MaxInterval
	}
	due := d.Add(c.Slack)
	if !now.Before(due) {
		// Tick once per deadline; tick again only if the projection has
		// not moved on a whole MaxInterval later.
		c.mu.Lock()
		last := c.lastTick
		c.mu.Unlock()
		if d.After(last) || now.Sub(last) >= c.MaxInterval {
			if err := c.Tick(ctx, now); err != nil {
				if c.Log != nil {
					c.Log.Error("presence clock: the tick was not appended; it is retried", "err", err.Error())
				}
				return c.MinInterval
			}
		}
		return c.MinInterval
	}
	return min(max(due.Sub(now), c.MinInterval), c.MaxInterval)
}

// Tick appends one clock.ticked at at.
func (c *Clock) Tick(ctx context.Context, at time.Time) error {
	ev, err := events.New(events.KindClockTicked, events.ClockTicked{At: at.UTC()}, at)
	if err != nil {
		return fmt.Errorf("presence: clock tick: %w", err)
	}
	ev.Source, ev.Actor = inventory.SourceClock, inventory.SourceClock
	if _, err := c.app.Append(ctx, ev); err != nil {
		return fmt.Errorf("presence: clock tick: %w", err)
	}
	c.mu.Lock()
	c.lastTick = at.UTC()
	c.mu.Unlock()
	return nil
}
