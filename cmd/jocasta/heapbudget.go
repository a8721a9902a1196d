package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/rs/zerolog"
)

// heapBudget is serve's soft memory limit, kept where what serve holds
// says it should be: the lowest live heap of the collections of the last
// budgetWindow (what serve keeps whatever it is doing: the device table,
// the other views' state) plus room for the work that comes and goes (a
// flow listener's 60 s window and its application to the traffic view,
// the API's requests), budgetRoom or half that floor, whichever is more.
//
// GOGC alone scales the heap's growth with everything live at the last
// collection, the long-lived device table included, and with a
// transient window in flight: at 10,000 devices × 1,000 peers an hour
// the live heap moves between 19 and 44 MB, and with GOGC=75 alone
// serve's RSS reached 115 MB (VmHWM) and stayed at 75–107 MB. With this
// budget (a floor of 20 MB: a 40 MiB limit) it reached 70–78 MB, for
// less than a second at a window, and stays at 50–58 MB, every flow
// recorded; the collector runs 280–300 times in 4 minutes instead of 41,
// mostly back to back for the second a window's application takes (its
// CPU limiter keeps it to half the CPU), and the window takes about 1.2 s
// to apply instead of 0.5 (docs/performance.md, "The exact peak, and a
// heap budget"). The limit follows the floor, so a large inventory never
// makes the collector run back to back between windows, and GOGC still
// applies below it (the lower of the two goals wins).
type heapBudget struct {
	room    int64         // the least room over the floor
	window  time.Duration // how far back the floor is looked for
	ceiling int64         // the highest limit (a cgroup's, serveMemoryLimit), 0 for none
	// lows are the floor's candidates, oldest first, each lower than the
	// ones before it: a live heap seen later and lower ends every higher
	// one's chance to be the floor (a sliding window's minimum).
	lows  []liveAt
	limit int64 // the limit last set, 0 before the first
}

type liveAt struct {
	at   time.Time
	live int64
}

// budgetRoom is the least room over the live heap's floor: a 60 s flow
// window of 166,667 rows and its application to the traffic view hold
// about 16 MB at once, and the runtime's own memory (span metadata, the
// heap's free pages not yet returned) counts in the limit too.
const budgetRoom = 20 << 20

// budgetWindow is how far back the floor is looked for: long enough to
// span several flow windows and sweeps, short enough to follow an
// inventory that shrank.
const budgetWindow = 10 * time.Minute

// budgetStep is the least change of the limit worth setting.
const budgetStep = 1 << 20

func newHeapBudget(ceiling int64) *heapBudget {
	return &heapBudget{room: budgetRoom, window: budgetWindow, ceiling: ceiling}
}

// observe records the live heap after a collection, at now, and returns
// the limit the floor now calls for and whether it moved by budgetStep
// or more from the one last set (then it is the one set).
func (b *heapBudget) observe(now time.Time, live int64) (int64, bool) {
	for len(b.lows) > 0 && b.lows[len(b.lows)-1].live >= live {
		b.lows = b.lows[:len(b.lows)-1]
	}
	b.lows = append(b.lows, liveAt{now, live})
	k := 0
	for k < len(b.lows)-1 && now.Sub(b.lows[k].at) > b.window {
		k++
	}
	b.lows = b.lows[k:]
	floor := b.lows[0].live
	limit := floor + max(b.room, floor/2)
	if b.ceiling > 0 {
		limit = min(limit, b.ceiling)
	}
	if b.limit != 0 && limit > b.limit-budgetStep && limit < b.limit+budgetStep {
		return b.limit, false
	}
	b.limit = limit
	return limit, true
}

// keep follows the collections once loaded returns (the load's live heap
// is not serve's), every interval until ctx ends, setting the soft
// memory limit observe calls for.
func (b *heapBudget) keep(ctx context.Context, loaded func(context.Context) error, interval time.Duration, log zerolog.Logger) error {
	if loaded(ctx) != nil {
		return nil // ctx ended
	}
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	var cycles uint64
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(samples)
		if n := samples[0].Value.Uint64(); n != cycles {
			cycles = n
			first := b.limit == 0
			if limit, moved := b.observe(time.Now(), int64(samples[1].Value.Uint64())); moved {
				debug.SetMemoryLimit(limit)
				ev := log.Debug()
				if first {
					ev = log.Info()
				}
				ev.Int64("memory_limit_mib", limit>>20).Int64("live_floor_mib", b.lows[0].live>>20).Msg("soft memory limit set from the live heap's floor")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
