package inventory

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
)

// applyingAppender stands in for store + runner: it gives each event the
// next seq and applies it to the harness at once.
type applyingAppender struct {
	mu   sync.Mutex
	h    *harness
	evs  []events.Envelope
	fail error
}

func (a *applyingAppender) Append(_ context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return nil, a.fail
	}
	out := make([]events.Envelope, len(evs))
	for k, ev := range evs {
		a.h.seq++
		ev.Seq = a.h.seq
		a.h.applyEv(ev)
		a.evs = append(a.evs, ev)
		out[k] = ev
	}
	return out, nil
}

func (a *applyingAppender) kinds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.evs {
		out = append(out, e.Kind)
	}
	return out
}

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) set(t time.Time) { f.mu.Lock(); f.t = t; f.mu.Unlock() }

func TestClockCheck(t *testing.T) {
	h := newHarness(t, Options{})
	app := &applyingAppender{h: h}
	now := &fakeNow{t: t0}
	c := NewClock(app, h.inv, now.now)
	ctx := context.Background()

	// Nothing known: nothing due, sleep the longest.
	if w := c.check(ctx); w != c.MaxInterval || len(app.kinds()) != 0 {
		t.Fatalf("empty: wait %s, appended %v", w, app.kinds())
	}
	h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
	h.sweep(sweepAt(t0.Add(5 * time.Minute)))
	// Deadline t0+15m: at t0+5m wait until just after it (capped at 1m).
	now.set(t0.Add(5 * time.Minute))
	if w := c.check(ctx); w != c.MaxInterval {
		t.Errorf("wait = %s, want the cap", w)
	}
	now.set(t0.Add(15*time.Minute - 30*time.Second))
	if w := c.check(ctx); w != 31*time.Second || len(app.kinds()) != 0 {
		t.Errorf("wait = %s, appended %v", w, app.kinds())
	}
	// Past the deadline plus slack: one tick, and the device goes offline.
	now.set(t0.Add(15*time.Minute + 2*time.Second))
	c.check(ctx)
	if got := app.kinds(); !slices.Equal(got, []string{events.KindClockTicked}) {
		t.Fatalf("appended %v", got)
	}
	if d := h.devices(1)[0]; d.Presence != projections.PresenceOffline {
		t.Errorf("presence = %s", d.Presence)
	}
	// Nothing left: no more ticks however long we wait.
	for k := range 5 {
		now.set(t0.Add(time.Duration(20+k) * time.Hour))
		c.check(ctx)
	}
	if got := app.kinds(); len(got) != 1 {
		t.Errorf("ticks while nothing is due: %v", got)
	}
	if ev := app.evs[0]; ev.Source != SourceClock {
		t.Errorf("tick source = %q", ev.Source)
	}
}

func TestClockNoTickForOverdueWithoutEvidence(t *testing.T) {
	h := newHarness(t, Options{})
	app := &applyingAppender{h: h}
	now := &fakeNow{t: t0}
	c := NewClock(app, h.inv, now.now)
	h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
	h.sweep(incomplete(t0.Add(5 * time.Minute)))
	now.set(t0.Add(16 * time.Minute))
	c.check(context.Background()) // one tick: the device passes the window
	now.set(t0.Add(2 * time.Hour))
	c.check(context.Background()) // overdue without evidence: nothing more
	if got := app.kinds(); len(got) != 1 {
		t.Errorf("ticks = %v, want one", got)
	}
	if d := h.devices(1)[0]; d.Presence != projections.PresenceOnline {
		t.Errorf("presence = %s, want online (no evidence)", d.Presence)
	}
}

func TestClockRunStopsAndLogsFailures(t *testing.T) {
	h := newHarness(t, Options{})
	app := &applyingAppender{h: h, fail: errors.New("disk full")}
	h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
	h.sweep(sweepAt(t0.Add(5 * time.Minute)))
	now := &fakeNow{t: t0.Add(time.Hour)}
	c := NewClock(app, h.inv, now.now)
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
	app.mu.Lock()
	app.fail = nil
	app.mu.Unlock()
	c.Poke()
	deadline := time.After(5 * time.Second)
	for h.inv.devsPresence() != projections.PresenceOffline {
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

// devsPresence returns the presence of the only device.
func (i *Inventory) devsPresence() string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	for _, d := range i.devs {
		return d.Presence
	}
	return ""
}

// recordingCompactor records the runner calls a purger makes.
type recordingCompactor struct {
	waited  []uint64
	compact []time.Time
}

func (r *recordingCompactor) WaitFor(_ context.Context, seq uint64) error {
	r.waited = append(r.waited, seq)
	return nil
}

func (r *recordingCompactor) Compact(_ context.Context, before time.Time) (int, error) {
	r.compact = append(r.compact, before)
	return 7, nil
}

func TestPurgeOnce(t *testing.T) {
	h := newHarness(t, Options{})
	app := &applyingAppender{h: h}
	h.sweep(sweepAt(t0, host("10.0.0.5", macPhone), host("10.0.0.6", macPrinter)))
	id := h.device("10.0.0.6").ID
	h.watch(id, "alice", true, t0.Add(time.Minute))
	comp := &recordingCompactor{}
	now := &fakeNow{t: t0.Add(100 * 24 * time.Hour)}
	p, err := NewPurger(app, h.inv, comp, RetentionOptions{History: 90 * 24 * time.Hour, Devices: 90 * 24 * time.Hour, Traffic: 720 * time.Hour}, now.now)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PurgeOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq == 0 || res.Counts["devices"] != 1 || len(res.Deleted) != 1 || res.Compacted != 7 {
		t.Errorf("result = %+v", res)
	}
	if len(comp.waited) != 1 || comp.waited[0] != res.Seq {
		t.Errorf("waited for %v, want %d", comp.waited, res.Seq)
	}
	if cut := now.t.Add(-90 * 24 * time.Hour); len(comp.compact) != 1 || !comp.compact[0].Equal(cut) {
		t.Errorf("compacted before %v, want %s", comp.compact, cut)
	}
	var rp events.RetentionPurged
	if err := events.DecodeInto(app.evs[0], &rp); err != nil {
		t.Fatal(err)
	}
	if rp.TrafficBefore == nil || rp.DNSBefore != nil || rp.HistoryBefore == nil || app.evs[0].Source != SourceRetention {
		t.Errorf("purge event = %+v", rp)
	}
	h.devices(1) // the watched printer stays

	// Nothing left to remove: no event, compaction still asked for.
	res, err = p.PurgeOnce(context.Background())
	if err != nil || res.Seq != 0 || len(app.evs) != 1 || len(comp.compact) != 2 {
		t.Errorf("second purge: %+v %v, %d events", res, err, len(app.evs))
	}

	// Forever: no cutoffs, nothing to do, no compaction.
	p2, _ := NewPurger(app, h.inv, comp, RetentionOptions{}, now.now)
	res, err = p2.PurgeOnce(context.Background())
	if err != nil || res.Seq != 0 || len(comp.compact) != 2 {
		t.Errorf("forever: %+v %v", res, err)
	}
	if _, err := NewPurger(app, h.inv, comp, RetentionOptions{History: -time.Hour}, now.now); err == nil {
		t.Errorf("negative window accepted")
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
