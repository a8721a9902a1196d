package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/presence"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
)

// churnLog writes days of 5-minute sweeps of 1,000 devices into a new
// database at path, as serve records them (the ingest sink, the presence
// clock ticking 2 s after each deadline, the retention job's purge every
// hour after which the runner snapshots once a week):
//   - 800 stable devices, each missing one sweep in 500 (a lost probe);
//   - 150 phones, away 08:00–17:00 on weekdays (each with its own offset)
//     and at home dozing now and then: 2 % of sweeps start a gap of 2 to
//     5 sweeps (10 to 25 minutes between sightings);
//   - 50 laptops, present 09:00–18:00 with a new address every day.
//
// The destination "alerts" receives every device's online and offline.
// It returns the number of events written.
func churnLog(tb testing.TB, path string, t0 time.Time, days int) uint64 {
	tb.Helper()
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	run, err := runner.New(st, []runner.Projection{inv, notify.NewRules()}, runner.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	rules := events.MustNew(events.KindNotifyRulesSet, events.NotifyRulesSet{Destination: "alerts",
		Rules: []events.NotifyRule{{Kinds: []string{projections.ChangeOnline, projections.ChangeOffline}, Scope: events.ScopeAll}}}, t0)
	rules.Source, rules.Actor = "cli", "cli:bench"
	if _, err := st.Append(ctx, rules); err != nil {
		tb.Fatal(err)
	}
	clock := presence.NewClock(st, inv, nil)
	sink := ingest.NewSink(st)
	rng := rand.New(rand.NewPCG(13, 30))
	pfx := netip.MustParsePrefix("10.20.0.0/22")
	addr := func(n int) netip.Addr { return netip.AddrFrom4([4]byte{10, 20, byte(n / 250), byte(n%250 + 2)}) }
	const stable, phones, laptops = 800, 150, 50
	doze := make([]int, phones)
	offset := make([]time.Duration, phones)
	for k := range offset {
		offset[k] = time.Duration(rng.IntN(120)) * time.Minute
	}
	tickUntil := func(now time.Time) {
		for {
			if err := run.CatchUp(ctx); err != nil {
				tb.Fatal(err)
			}
			d, ok := inv.NextPresenceDeadline()
			if !ok || d.Add(2*time.Second).After(now) {
				return
			}
			if err := clock.Tick(ctx, d.Add(2*time.Second)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for i := range days * 288 {
		fin := t0.Add(time.Duration(i) * 5 * time.Minute)
		tickUntil(fin)
		day, tod := i/288, time.Duration(i%288)*5*time.Minute
		if i%12 == 11 {
			cut := fin.Add(-90 * 24 * time.Hour)
			p := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{}}, fin.Add(-time.Second))
			p.Source, p.Actor = "retention", "retention"
			if _, err := st.Append(ctx, p); err != nil {
				tb.Fatal(err)
			}
		}
		sw := &sources.Sweep{ScanID: strconv.Itoa(i), Started: fin.Add(-20 * time.Second), Finished: fin,
			Networks: []netip.Prefix{pfx}, ProbesSent: 1020, Complete: true}
		add := func(n int, ip netip.Addr) {
			h := &sources.Host{IP: ip, Network: pfx, Via: sources.ViaICMP, MAC: net.HardwareAddr{0x02, 0x20, 0, 0, byte(n >> 8), byte(n)},
				RTT: time.Duration(300+rng.IntN(3000)) * time.Microsecond}
			if n%4 == 0 {
				h.Names = map[string]string{"dns": fmt.Sprintf("host-%d.lab", n)}
			}
			sw.Hosts = append(sw.Hosts, h)
		}
		for n := range stable {
			if rng.IntN(500) != 0 {
				add(n, addr(n))
			}
		}
		weekday := fin.Weekday() != time.Saturday && fin.Weekday() != time.Sunday
		for k := range phones {
			n := stable + k
			if weekday && tod >= 8*time.Hour+offset[k] && tod < 17*time.Hour+offset[k] {
				continue
			}
			if doze[k] > 0 {
				doze[k]--
				continue
			}
			if rng.IntN(50) == 0 {
				doze[k] = 1 + rng.IntN(4)
			}
			add(n, addr(n))
		}
		for k := range laptops {
			if tod >= 9*time.Hour && tod < 18*time.Hour {
				add(stable+phones+k, addr(stable+phones+(k+day)%laptops))
			}
		}
		if err := sink.Record(ctx, sources.Run{Instance: sources.Instance{Source: "sweep:lab", Kind: "sweep"}, Started: sw.Started, Finished: fin, Result: sw}); err != nil {
			tb.Fatal(err)
		}
	}
	tickUntil(t0.Add(time.Duration(days) * 24 * time.Hour))
	return st.Head()
}

// BenchmarkWhatIf30Days is `jocasta whatif --online-window 30m --since
// <30 days before the end>` over a generated log of 38 days (churnLog):
// both replays start from the weekly snapshot before --since and count
// the last 30 days. The budget is 30 s (docs/performance.md).
func BenchmarkWhatIf30Days(b *testing.B) {
	if testing.Short() {
		b.Skip("generates 38 days of sweeps of 1,000 devices")
	}
	days := 38
	if v, err := strconv.Atoi(os.Getenv("JOCASTA_WHATIF_DAYS")); err == nil && v > 8 {
		days = v // a shorter or longer log; --since stays 30 days before its end when it can
	}
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	end := t0.Add(time.Duration(days) * 24 * time.Hour)
	path := filepath.Join(b.TempDir(), "churn.db")
	start := time.Now()
	n := churnLog(b, path, t0, days)
	fi, _ := os.Stat(path)
	b.Logf("generated %d events in %s (%d MiB)", n, time.Since(start).Round(time.Second), fi.Size()>>20)
	st, err := store.Open(path, store.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c := &core{st: st, now: func() time.Time { return end }}
	since := end.Add(-30 * 24 * time.Hour)
	if min8 := t0.Add(8 * 24 * time.Hour); since.Before(min8) {
		since = min8
	}
	req := whatifReq{OnlineWindow: 30 * time.Minute, AddressGrace: 6 * time.Hour, CurrentOnlineWindow: 15 * time.Minute, CurrentAddressGrace: 6 * time.Hour,
		Since: since, Destinations: []string{"alerts", "default"}}
	b.ResetTimer()
	for range b.N {
		wall, cpu := time.Now(), cpuTime()
		resp, err := c.WhatIf(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		// On a loaded machine the CPU time says what it costs better than
		// the wall clock.
		b.ReportMetric(float64(resp.Events), "events")
		b.ReportMetric((cpuTime() - cpu).Seconds(), "s-cpu")
		b.ReportMetric(time.Since(wall).Seconds(), "s-wall")
		if resp.Total.Did.Offline <= resp.Total.Would.Offline || resp.Total.Would.Notifications == 0 {
			b.Fatalf("a 30 m window should flap less: did %+v, would %+v", resp.Total.Did, resp.Total.Would)
		}
		b.Logf("%d events from %s: did %+v, would %+v", resp.Events, resp.StartedFrom, resp.Total.Did, resp.Total.Would)
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
