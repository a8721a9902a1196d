package inventory

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// rulesLog drives a log in which the rules change: two devices seen at
// t0; complete sweeps without them at +10m, +20m, +40m and +70m; the rules
// set to a 15m window at t0 - 1m and to a 60m window at +30m.
func rulesLog(h *harness) {
	h.t.Helper()
	set := func(at time.Time, window, grace int64) {
		h.applyEv(h.envelope(events.KindPresenceRulesSet, events.PresenceRulesSet{OnlineWindowS: window, AddressGraceS: grace}, at, "config", "config", ""))
	}
	set(t0.Add(-time.Minute), 15*60, 6*3600)
	h.sweep(sweepAt(t0, host("10.0.0.1", "00:11:22:00:00:01"), host("10.0.0.2", "00:11:22:00:00:02")))
	h.sweep(sweepAt(t0.Add(10*time.Minute), host("10.0.0.2", "00:11:22:00:00:02")))
	h.sweep(sweepAt(t0.Add(20*time.Minute), host("10.0.0.2", "00:11:22:00:00:02")))
	h.tick(t0.Add(25 * time.Minute))
	set(t0.Add(30*time.Minute), 60*60, 0)
	h.sweep(sweepAt(t0.Add(40 * time.Minute)))
	h.sweep(sweepAt(t0.Add(70 * time.Minute)))
	h.tick(t0.Add(90 * time.Minute))
}

// TestRulesFromTheLog: inventory.rules_set puts its rules in force from
// its time on, whatever the inventory was configured with, so a replay
// under another configuration shows the presence that was shown; whatif's
// FixedRules replays under its own rules throughout.
func TestRulesFromTheLog(t *testing.T) {
	run := func(opts Options) (*harness, []string) {
		h := newHarness(t, opts)
		rulesLog(h)
		return h, kinds(h.entries())
	}
	live, liveKinds := run(Options{OnlineWindow: 15 * time.Minute})
	// 10.0.0.1: past 15m at the +20m sweep (offline); 10.0.0.2, last seen
	// at +20m, is within 60m at +40m and +70m, past it at the tick at +90m.
	one, two := live.device("10.0.0.1"), live.device("10.0.0.2")
	if one.Presence != "offline" || two.Presence != "offline" {
		t.Fatalf("presence %s, %s", one.Presence, two.Presence)
	}
	var offlineAt []time.Time
	for _, e := range live.entries() {
		if e.Kind == projections.ChangeOffline {
			offlineAt = append(offlineAt, e.Time)
		}
	}
	if len(offlineAt) != 2 || !offlineAt[0].Equal(t0.Add(20*time.Minute)) || !offlineAt[1].Equal(t0.Add(90*time.Minute)) {
		t.Fatalf("offline at %v, want +20m (15m window) and +90m (60m window from +30m)", offlineAt)
	}
	if r := live.inv.Rules(); !r.Recorded || r.OnlineWindow != time.Hour || r.AddressGrace != 0 {
		t.Errorf("rules in force %+v, want the recorded 60m and 0s", r)
	}
	// The same log replayed by an inventory configured otherwise.
	other, otherKinds := run(Options{OnlineWindow: 5 * time.Minute, AddressGrace: 48 * time.Hour})
	if d := cmp.Diff(liveKinds, otherKinds); d != "" {
		t.Errorf("a replay configured with 5m shows other changes (-live +replay):\n%s", d)
	}
	if d := cmp.Diff(snapshotAll(t, live.inv), snapshotAll(t, other.inv)); d != "" {
		t.Errorf("a replay configured with 5m shows another inventory (-live +replay):\n%s", d)
	}
	// Reloaded, the recorded rules stay in force.
	live.checkReload()
	if r := live.load().Rules(); !r.Recorded || r.OnlineWindow != time.Hour {
		t.Errorf("rules after a reload %+v", r)
	}
	if _, differs := live.inv.RulesEvent(time.Hour, 0); differs {
		t.Error("RulesEvent: the rules in force are said to differ")
	}
	if p, differs := live.inv.RulesEvent(30*time.Minute, 0); !differs || p.OnlineWindowS != 1800 || p.AddressGraceS != 0 {
		t.Errorf("RulesEvent(30m, 0s) = %+v, %v", p, differs)
	}

	// whatif's replay under a 5m window throughout ignores the events.
	fixed, _ := run(Options{OnlineWindow: 5 * time.Minute, FixedRules: true})
	if r := fixed.inv.Rules(); r.OnlineWindow != 5*time.Minute {
		t.Errorf("FixedRules: rules in force %+v, want 5m", r)
	}
	if fixed.device("10.0.0.2").Presence != "offline" {
		t.Error("FixedRules: 10.0.0.2 not offline")
	}
	var first time.Time
	for _, e := range fixed.entries() {
		if e.Kind == projections.ChangeOffline && e.DeviceID == fixed.device("10.0.0.2").ID {
			first = e.Time
		}
	}
	if !first.Equal(t0.Add(40 * time.Minute)) {
		t.Errorf("FixedRules 5m: 10.0.0.2 offline at %s, want at the +40m sweep", first)
	}

	// Nothing recorded: the configured rules, and RulesEvent says record.
	fresh := newHarness(t, Options{OnlineWindow: 20 * time.Minute})
	if r := fresh.inv.Rules(); r.Recorded || r.OnlineWindow != 20*time.Minute || r.AddressGrace != DefaultAddressGrace {
		t.Errorf("rules of a new inventory %+v", r)
	}
	if _, differs := fresh.inv.RulesEvent(20*time.Minute, DefaultAddressGrace); !differs {
		t.Error("RulesEvent on a log with no rules recorded: want them recorded")
	}
}

// TestRulesWidenedBringsOverdueBack: a device past the old window but
// without evidence of absence (overdue) is within a wider new window: it
// is online and waiting again, and goes offline at the new deadline.
func TestRulesWidenedBringsOverdueBack(t *testing.T) {
	h := newHarness(t, Options{OnlineWindow: 15 * time.Minute})
	h.sweep(sweepAt(t0, host("10.0.0.1", "00:11:22:00:00:01")))
	h.tick(t0.Add(20 * time.Minute)) // past 15m, no sweep since: overdue
	if d := h.device("10.0.0.1"); d.Presence != "online" || !h.inv.devs[d.ID].Overdue {
		t.Fatalf("before: %s, overdue %v", d.Presence, h.inv.devs[d.ID].Overdue)
	}
	h.applyEv(h.envelope(events.KindPresenceRulesSet, events.PresenceRulesSet{OnlineWindowS: 3600, AddressGraceS: 3600}, t0.Add(21*time.Minute), "config", "config", ""))
	d := h.device("10.0.0.1")
	if h.inv.devs[d.ID].Overdue {
		t.Error("still overdue within the new 60m window")
	}
	if next, ok := h.inv.NextPresenceDeadline(); !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("next deadline %s %v, want +60m", next, ok)
	}
	h.sweep(sweepAt(t0.Add(61 * time.Minute)))
	if d := h.device("10.0.0.1"); d.Presence != "offline" {
		t.Errorf("after the 60m window and a complete sweep: %s", d.Presence)
	}
	h.checkReload()
}
