package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Appender appends events to the log durably (store.Store does).
type Appender interface {
	Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error)
}

// header is implemented by an Appender that knows its log's head
// (store.Store does): a purge then plans only once the read models have
// applied the log as it was when the purge began. Without the wait, a
// purge right after a start plans on read models still catching up, finds
// nothing to remove, and leaves the records for another interval.
type header interface {
	Head() uint64
}

// Planner works out what a purge removes (inventory.Inventory).
type Planner interface {
	PurgePlan(ctx context.Context, c inventory.Cutoffs) (map[string]int, []string, error)
}

// Options are the contract's retention windows; 0 keeps that kind of
// record forever.
type Options struct {
	History time.Duration
	Traffic time.Duration
	DNS     time.Duration
	Devices time.Duration
}

// Validate reports every invalid window.
func (o Options) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"history", o.History}, {"traffic", o.Traffic}, {"dns", o.DNS}, {"devices", o.Devices}} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("retention.%s %s: must not be negative (0s keeps forever)", f.key, f.d))
		}
	}
	return errors.Join(errs...)
}

// Compactor is what the purger needs from the projection runner.
type Compactor interface {
	// WaitFor returns once every projection has applied seq.
	WaitFor(ctx context.Context, seq uint64) error
	// Compact removes the log behind the newest snapshot older than
	// before and returns how many events it removed.
	Compact(ctx context.Context, before time.Time) (int, error)
}

// Purger is the hourly retention job.
type Purger struct {
	app  Appender
	inv  Planner
	comp Compactor
	opts Options
	now  func() time.Time

	// FirstDelay is the wait before the first purge after Run starts.
	// Default 1m.
	FirstDelay time.Duration
	// Interval is the wait between purges. Default 1h.
	Interval time.Duration
	// Log reports each purge and each failure; nil discards.
	Log *slog.Logger
	// Keepers are the read models of hourly rows with a retention of
	// their own (traffic, DNS): a purge is due when one holds rows past
	// it, even when the inventory has nothing to remove.
	Keepers []Keeper
}

// Keeper is a read model that keeps hourly rows for its own retention.
type Keeper struct {
	// Name keys its count in the event ("traffic_rows", "dns_rows").
	Name string
	// Cutoff picks its cutoff from the purge's (nil: kept forever).
	Cutoff func(rp *events.RetentionPurged) *time.Time
	// RowsBefore counts its rows of hours that start before t.
	RowsBefore func(ctx context.Context, t time.Time) (int, error)
}

// NewPurger returns the retention job for inv. It appends through app,
// and after a purge waits for comp to apply it and asks comp to compact
// the log. now is the wall clock (time.Now in production).
func NewPurger(app Appender, inv Planner, comp Compactor, opts Options, now func() time.Time) (*Purger, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("retention: purger: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Purger{app: app, inv: inv, comp: comp, opts: opts, now: now, FirstDelay: time.Minute, Interval: time.Hour}, nil
}

// PurgeResult is what one purge did.
type PurgeResult struct {
	// Seq of the retention.purged event, 0 when nothing was due.
	Seq       uint64
	Counts    map[string]int
	Deleted   []string
	Compacted int
}

// Run purges after FirstDelay and then every Interval until ctx ends. A
// failed purge is logged and tried again at the next interval. It
// returns ctx's error.
func (p *Purger) Run(ctx context.Context) error {
	timer := time.NewTimer(p.FirstDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		res, err := p.PurgeOnce(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			p.log().Error("retention: the purge failed; it is retried at the next interval", "err", err.Error())
		case res.Seq != 0 || res.Compacted > 0:
			p.log().Info("retention: purged", "counts", fmt.Sprint(res.Counts), "seq", res.Seq, "compacted", res.Compacted)
		}
		timer.Reset(p.Interval)
	}
}

func (p *Purger) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// cutoff is now minus d, nil for 0 (forever).
func cutoff(now time.Time, d time.Duration) *time.Time {
	if d <= 0 {
		return nil
	}
	t := now.Add(-d).UTC()
	return &t
}

// PurgeOnce computes the cutoffs from now, appends a retention.purged
// event when something is to be removed (and only then: an hourly event
// that removes nothing would only grow the log), waits until the
// projections applied it, then compacts the log behind the newest
// snapshot older than the history cutoff.
func (p *Purger) PurgeOnce(ctx context.Context) (PurgeResult, error) {
	if h, ok := p.app.(header); ok {
		if err := p.comp.WaitFor(ctx, h.Head()); err != nil {
			return PurgeResult{}, fmt.Errorf("retention: purge: wait for the read models to catch up: %w", err)
		}
	}
	now := p.now().UTC()
	rp := events.RetentionPurged{
		HistoryBefore: cutoff(now, p.opts.History),
		TrafficBefore: cutoff(now, p.opts.Traffic),
		DNSBefore:     cutoff(now, p.opts.DNS),
		DevicesBefore: cutoff(now, p.opts.Devices),
	}
	counts, deleted, err := p.inv.PurgePlan(ctx, inventory.Cutoffs{History: rp.HistoryBefore, Devices: rp.DevicesBefore})
	if err != nil {
		return PurgeResult{}, err
	}
	for _, k := range p.Keepers {
		c := k.Cutoff(&rp)
		if c == nil {
			continue
		}
		n, err := k.RowsBefore(ctx, *c)
		if err != nil {
			return PurgeResult{}, fmt.Errorf("retention: purge plan of %s: %w", k.Name, err)
		}
		if n > 0 {
			if counts == nil {
				counts = map[string]int{}
			}
			counts[k.Name] = n
		}
	}
	res := PurgeResult{Counts: counts, Deleted: deleted}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total > 0 {
		rp.Counts, rp.DeletedDevices = counts, deleted
		ev, err := events.New(events.KindRetentionPurged, rp, now)
		if err != nil {
			return res, fmt.Errorf("retention: purge: %w", err)
		}
		ev.Source, ev.Actor = inventory.SourceRetention, inventory.SourceRetention
		stored, err := p.app.Append(ctx, ev)
		if err != nil {
			return res, fmt.Errorf("retention: purge: append: %w", err)
		}
		res.Seq = stored[len(stored)-1].Seq
		if err := p.comp.WaitFor(ctx, res.Seq); err != nil {
			return res, fmt.Errorf("retention: purge: wait for projections: %w", err)
		}
	}
	if rp.HistoryBefore != nil {
		n, err := p.comp.Compact(ctx, *rp.HistoryBefore)
		if err != nil {
			return res, fmt.Errorf("retention: purge: compact: %w", err)
		}
		res.Compacted = n
	}
	return res, nil
}
