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
// budgetWindow (the floor: what serve keeps whatever it is doing, the
// device table and the other views' state) plus the growth GOGC allows
// over that floor and budgetOverhead for the runtime's own memory, or
// budgetRoom over the floor when that is more.
//
// GOGC alone scales the heap's growth with everything live at the last
// collection, the transient included: at 10,000 devices × 1,000 peers an
// hour the live heap moves between 19 and 44 MB (a flow window in flight
// for a second each minute), and with GOGC=75 alone serve's RSS reached
// 115 MB (VmHWM) and stayed at 75–107 MB. The budget computes the growth
// from the floor instead, so the collector paces as GOGC=75 would while
// serve holds what it keeps (make bench-api: the same within the run to
// run noise) and works harder only while a window is in flight. With it
// the RSS peaked at 75 MB, for less than a second at a window, every
// flow recorded, the collector running back to back for the second a
// window takes to apply (its CPU limiter keeps it to half the CPU;
// docs/performance.md, "The exact peak, and a heap budget"). The limit
// follows the floor, so a large inventory raises it with it, and GOGC
// still applies below it (the lower of the two goals wins).
type heapBudget struct {
	room     int64         // the least room over the floor
	growth   int64         // GOGC's percent of growth over the floor
	overhead int64         // the runtime's memory beside the heap's objects
	window   time.Duration // how far back the floor is looked for
	ceiling  int64         // the highest limit (a cgroup's, serveMemoryLimit), 0 for none
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

// budgetRoom is the least room over the live heap's floor, for a small
// inventory: the runtime's own memory and a flow window in flight.
const budgetRoom = 20 << 20

// budgetOverhead is what the limit counts beside the heap's objects: the
// goroutines' stacks, span metadata, the heap's free pages not yet
// returned. With less, the limit bound below GOGC's goal under the API's
// load (50 clients, 20,000 requests/s) and its p99 rose by a quarter to
// two thirds (make bench-api). It was 16 MiB while the runtime also kept
// heap profiling's tables (1.6 MB, off since: noheapprofile): 14.5 MiB
// leaves the heap the room 16 MiB did. 13 MiB cost the API 5–10 % of its
// requests a second (docs/performance.md, "The floor lowered").
const budgetOverhead = 29 << 19 // 14.5 MiB

// budgetWindow is how far back the floor is looked for: long enough to
// span several flow windows and sweeps, short enough to follow an
// inventory that shrank.
const budgetWindow = 10 * time.Minute

// budgetStep is the least change of the limit worth setting.
const budgetStep = 1 << 20

func newHeapBudget(ceiling int64) *heapBudget {
	return &heapBudget{room: budgetRoom, growth: serveGCPercent, overhead: budgetOverhead, window: budgetWindow, ceiling: ceiling}
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
	limit := floor + max(b.room, floor*b.growth/100+b.overhead)
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
