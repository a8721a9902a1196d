package presence

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const macTV = "00:1b:63:00:00:05"

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) set(t time.Time) { f.mu.Lock(); f.t = t; f.mu.Unlock() }

func kinds(h *inventorytest.Harness) []string {
	var out []string
	for _, e := range h.Appended() {
		out = append(out, e.Kind)
	}
	return out
}

func TestClockCheck(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	now := &fakeNow{t: t0}
	c := NewClock(h, h.Inv, now.now)
	ctx := context.Background()

	// Nothing known: nothing due, sleep the longest.
	if w := c.check(ctx); w != c.MaxInterval || len(kinds(h)) != 0 {
		t.Fatalf("empty: wait %s, appended %v", w, kinds(h))
	}
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", macTV))
	h.Sweep(t0.Add(5*time.Minute), true)
	// Deadline t0+15m: at t0+5m wait until just after it (capped at 1m).
	now.set(t0.Add(5 * time.Minute))
	if w := c.check(ctx); w != c.MaxInterval {
		t.Errorf("wait = %s, want the cap", w)
	}
	now.set(t0.Add(15*time.Minute - 30*time.Second))
	if w := c.check(ctx); w != 31*time.Second || len(kinds(h)) != 0 {
		t.Errorf("wait = %s, appended %v", w, kinds(h))
	}
	// Past the deadline plus slack: one tick, and the device goes offline.
	now.set(t0.Add(15*time.Minute + 2*time.Second))
	c.check(ctx)
	if got := kinds(h); !slices.Equal(got, []string{events.KindClockTicked}) {
		t.Fatalf("appended %v", got)
	}
	if d := h.Devices()[0]; d.Presence != projections.PresenceOffline {
		t.Errorf("presence = %s", d.Presence)
	}
	// Nothing left: no more ticks however long we wait.
	for k := range 5 {
		now.set(t0.Add(time.Duration(20+k) * time.Hour))
		c.check(ctx)
	}
	if got := kinds(h); len(got) != 1 {
		t.Errorf("ticks while nothing is due: %v", got)
	}
	if ev := h.Appended()[0]; ev.Source != inventory.SourceClock {
		t.Errorf("tick source = %q", ev.Source)
	}
}

func TestClockNoTickForOverdueWithoutEvidence(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	now := &fakeNow{t: t0}
	c := NewClock(h, h.Inv, now.now)
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", macTV))
	h.Sweep(t0.Add(5*time.Minute), false)
	now.set(t0.Add(16 * time.Minute))
	c.check(context.Background()) // one tick: the device passes the window
	now.set(t0.Add(2 * time.Hour))
	c.check(context.Background()) // overdue without evidence: nothing more
	if got := kinds(h); len(got) != 1 {
		t.Errorf("ticks = %v, want one", got)
	}
	if d := h.Devices()[0]; d.Presence != projections.PresenceOnline {
		t.Errorf("presence = %s, want online (no evidence)", d.Presence)
	}
}

func TestClockRunStopsAndLogsFailures(t *testing.T) {
	h := inventorytest.New(t, inventory.Options{})
	h.SetFail(errors.New("disk full"))
	h.Sweep(t0, true, inventorytest.Host("10.0.0.5", macTV))
	h.Sweep(t0.Add(5*time.Minute), true)
	now := &fakeNow{t: t0.Add(time.Hour)}
	c := NewClock(h, h.Inv, now.now)
	c.MinInterval = time.Millisecond
	logged := make(chan string, 10)
	c.Log = slog.New(chanHandler(logged))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-logged:
	case <-time.After(5 * time.Second):
		t.Fatal("no failure logged")
	}
	h.SetFail(nil)
	c.Poke()
	deadline := time.After(5 * time.Second)
	for h.Devices()[0].Presence != projections.PresenceOffline {
		select {
		case <-deadline:
			t.Fatal("clock never ticked after the failure cleared")
		case <-time.After(5 * time.Millisecond):
			c.Poke()
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
}

// chanHandler is a slog handler that sends each message to a channel
// (dropping it when the channel is full).
type chanHandler chan string

func (h chanHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h <- r.Message:
	default:
	}
	return nil
}
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h chanHandler) WithGroup(string) slog.Handler      { return h }
