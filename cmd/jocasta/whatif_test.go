package main

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/presence"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
)

// flapLog writes, into the database at path, a day of 5-minute sweeps
// (288, from t0) as serve records them: each sweep through the ingest
// sink, the projections caught up after it, and the presence clock
// ticking (2 s after each deadline, as its checks fall) between sweeps.
//   - printer 10.20.0.2 answers every sweep;
//   - phone 10.20.0.3 misses the four sweeps after sweeps 20, 100 and 200:
//     25 minutes between two sightings, past a 15-minute window, within a
//     30-minute one;
//   - laptop 10.20.0.4 leaves after sweep 60 and comes back at sweep 120
//     as 10.20.0.14 (its old address unseen for 6 h 55 m by sweep 143).
//
// A retention.purged that removes nothing comes every three hours. The destination "alerts" is set to receive online and offline of every
// device. snapEvery, when set, makes the runner snapshot that often.
// flapDB writes a config (noSweeps and extra) and, in its database,
// flapLog's day starting two days ago at midnight UTC; it returns the
// config's path, the config and that midnight.
func flapDB(t *testing.T, extra string) (string, *config.Config, time.Time) {
	t.Helper()
	cfg := writeConfig(t, t.TempDir(), noSweeps+extra)
	c, err := config.Load(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	flapLog(t, c.DBFile(), t0, 0)
	return cfg, c, t0
}

func flapLog(t testing.TB, path string, t0 time.Time, snapEvery time.Duration) {
	t.Helper()
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := config.Defaults()
	set, err := newProjections(&cfg, nil, time.Now, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.New(st, set.list(), runner.Options{SnapshotEvery: snapEvery})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rules := events.MustNew(events.KindNotifyRulesSet, events.NotifyRulesSet{Destination: "alerts",
		Rules: []events.NotifyRule{{Kinds: []string{projections.ChangeOnline, projections.ChangeOffline}, Scope: events.ScopeAll}}}, t0.Add(-time.Hour))
	rules.Source, rules.Actor = "cli", "cli:test"
	if _, err := st.Append(ctx, rules); err != nil {
		t.Fatal(err)
	}
	clock := presence.NewClock(st, set.inv, nil)
	sink := ingest.NewSink(st)
	pfx := netip.MustParsePrefix("10.20.0.0/24")
	host := func(ip string, mac byte, name string) *sources.Host {
		return &sources.Host{IP: netip.MustParseAddr(ip), Network: pfx, Via: sources.ViaICMP, RTT: time.Millisecond,
			MAC: net.HardwareAddr{0x02, 0x11, 0x22, 0, 0, mac}, Names: map[string]string{"dns": name}}
	}
	phoneAway := func(i int) bool {
		for _, k := range []int{20, 100, 200} {
			if i > k && i <= k+4 {
				return true
			}
		}
		return false
	}
	// tickUntil ticks as the presence clock does until now.
	tickUntil := func(now time.Time) {
		for {
			if err := run.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			d, ok := set.inv.NextPresenceDeadline()
			if !ok || d.Add(2*time.Second).After(now) {
				return
			}
			if err := clock.Tick(ctx, d.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 288 {
		fin := t0.Add(time.Duration(i) * 5 * time.Minute)
		tickUntil(fin)
		if i%36 == 35 {
			// The retention job's hourly purge, removing nothing here
			// (a snapshot follows it when one is due).
			cut := t0.Add(-30 * 24 * time.Hour)
			p := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{}}, fin.Add(-time.Second))
			p.Source, p.Actor = "retention", "retention"
			if _, err := st.Append(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		sw := &sources.Sweep{ScanID: fin.Format(time.RFC3339), Started: fin.Add(-8 * time.Second), Finished: fin,
			Networks: []netip.Prefix{pfx}, ProbesSent: 254, Complete: true}
		sw.Hosts = append(sw.Hosts, host("10.20.0.2", 1, "printer.lab"))
		if !phoneAway(i) {
			sw.Hosts = append(sw.Hosts, host("10.20.0.3", 2, "phone.lab"))
		}
		switch {
		case i <= 60:
			sw.Hosts = append(sw.Hosts, host("10.20.0.4", 3, "laptop.lab"))
		case i >= 120:
			sw.Hosts = append(sw.Hosts, host("10.20.0.14", 3, "laptop.lab"))
		}
		if err := sink.Record(ctx, sources.Run{Instance: sources.Instance{Source: "sweep:lab", Kind: "sweep"}, Started: sw.Started, Finished: fin, Result: sw}); err != nil {
			t.Fatal(err)
		}
	}
	tickUntil(t0.Add(24 * time.Hour))
}

func TestWhatIf(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := t0.Add(24 * time.Hour)
	whole := filepath.Join(t.TempDir(), "whole.db")
	flapLog(t, whole, t0, 0)
	snapped := filepath.Join(t.TempDir(), "snapped.db")
	flapLog(t, snapped, t0, 4*time.Hour)

	counts := func(online, offline, added, retired, notes int) whatifCounts {
		return whatifCounts{Online: online, Offline: offline, AddressesAdded: added, AddressesRetired: retired, Notifications: notes}
	}
	type dev struct {
		name       string
		did, would whatifCounts
	}
	tests := []struct {
		name          string
		db            string
		window, grace time.Duration
		since, until  time.Time
		start         string
		did, would    whatifCounts
		devices       []dev
		dests         []whatifDest
	}{
		{
			// The whole day: the phone's three absences of 25 minutes are
			// three offline/online pairs under 15 m and nothing under
			// 30 m; the laptop's five hours away is one pair under both.
			// "alerts" receives them all; "default" (never set: every new
			// device) the three discoveries.
			name: "30m window, whole day", db: whole, window: 30 * time.Minute, grace: 6 * time.Hour, until: end,
			start: "the first event",
			did:   counts(4, 4, 1, 1, 11), would: counts(1, 1, 1, 1, 5),
			devices: []dev{
				{"phone.lab", counts(3, 3, 0, 0, 7), counts(0, 0, 0, 0, 1)},
				{"laptop.lab", counts(1, 1, 1, 1, 3), counts(1, 1, 1, 1, 3)},
				{"printer.lab", counts(0, 0, 0, 0, 1), counts(0, 0, 0, 0, 1)},
			},
			dests: []whatifDest{{"alerts", 8, 2}, {"default", 3, 3}},
		},
		{
			// The configured rules again: the replay's own ticks give
			// exactly what the recorded ones gave.
			name: "same rules", db: whole, window: 15 * time.Minute, grace: 6 * time.Hour, until: end,
			start: "the first event",
			did:   counts(4, 4, 1, 1, 11), would: counts(4, 4, 1, 1, 11),
			devices: []dev{
				{"phone.lab", counts(3, 3, 0, 0, 7), counts(3, 3, 0, 0, 7)},
				{"laptop.lab", counts(1, 1, 1, 1, 3), counts(1, 1, 1, 1, 3)},
				{"printer.lab", counts(0, 0, 0, 0, 1), counts(0, 0, 0, 0, 1)},
			},
			dests: []whatifDest{{"alerts", 8, 8}, {"default", 3, 3}},
		},
		{
			// From 09:00 (from the snapshot taken after the first
			// purge, 02:55, the only one in seven days): the phone's last absence (16:40) and the
			// laptop's return (10:00, a new address; the old one retired
			// at 11:55 under 6 h of grace, never under 24 h).
			name: "since 09:00, 10m window, 24h grace", db: whole, window: 10 * time.Minute, grace: 24 * time.Hour,
			since: t0.Add(9 * time.Hour), until: end, start: "the snapshot at seq 38 (2026-11-01T02:54:59Z)",
			did: counts(2, 1, 1, 1, 3), would: counts(2, 1, 1, 0, 3),
			devices: []dev{
				{"phone.lab", counts(1, 1, 0, 0, 2), counts(1, 1, 0, 0, 2)},
				{"laptop.lab", counts(1, 0, 1, 1, 1), counts(1, 0, 1, 0, 1)},
			},
			dests: []whatifDest{{"alerts", 3, 3}, {"default", 0, 0}},
		},
		{
			// The same from a later snapshot (one every 4 h: 08:55).
			name: "since 09:00 from a snapshot", db: snapped, window: 10 * time.Minute, grace: 24 * time.Hour,
			since: t0.Add(9 * time.Hour), until: end, start: "the snapshot at seq 114 (2026-11-01T08:54:59Z)",
			did: counts(2, 1, 1, 1, 3), would: counts(2, 1, 1, 0, 3),
			devices: []dev{
				{"phone.lab", counts(1, 1, 0, 0, 2), counts(1, 1, 0, 0, 2)},
				{"laptop.lab", counts(1, 0, 1, 1, 1), counts(1, 0, 1, 0, 1)},
			},
			dests: []whatifDest{{"alerts", 3, 3}, {"default", 0, 0}},
		},
		{
			// Up to 04:00: the first two absences of the phone only
			// (01:40 and, at 08:20, outside).
			name: "until 04:00", db: whole, window: 30 * time.Minute, grace: 6 * time.Hour,
			until: t0.Add(4 * time.Hour), start: "the first event",
			did: counts(1, 1, 0, 0, 5), would: counts(0, 0, 0, 0, 3),
			devices: []dev{
				{"phone.lab", counts(1, 1, 0, 0, 3), counts(0, 0, 0, 0, 1)},
				{"laptop.lab", counts(0, 0, 0, 0, 1), counts(0, 0, 0, 0, 1)},
				{"printer.lab", counts(0, 0, 0, 0, 1), counts(0, 0, 0, 0, 1)},
			},
			dests: []whatifDest{{"alerts", 2, 0}, {"default", 3, 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := store.Open(tt.db, store.Options{ReadOnly: true, MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			c := &core{st: st, now: func() time.Time { return end.Add(time.Hour) }}
			resp, err := c.WhatIf(context.Background(), whatifReq{OnlineWindow: tt.window, AddressGrace: tt.grace,
				CurrentOnlineWindow: 15 * time.Minute, CurrentAddressGrace: 6 * time.Hour,
				Since: tt.since, Until: tt.until, Destinations: []string{"alerts", "default"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Total.Did != tt.did || resp.Total.Would != tt.would {
				t.Errorf("total did %+v would %+v, want %+v and %+v", resp.Total.Did, resp.Total.Would, tt.did, tt.would)
			}
			if len(resp.Devices) != len(tt.devices) {
				t.Fatalf("devices %+v, want %d", resp.Devices, len(tt.devices))
			}
			for k, d := range tt.devices {
				got := resp.Devices[k]
				if got.Name != d.name || got.Did != d.did || got.Would != d.would {
					t.Errorf("device %d: %s did %+v would %+v, want %s %+v %+v", k, got.Name, got.Did, got.Would, d.name, d.did, d.would)
				}
			}
			if len(resp.Destinations) != len(tt.dests) {
				t.Fatalf("destinations %+v", resp.Destinations)
			}
			for k, d := range tt.dests {
				if resp.Destinations[k] != d {
					t.Errorf("destination %+v, want %+v", resp.Destinations[k], d)
				}
			}
			if !strings.HasPrefix(resp.StartedFrom, tt.start) {
				t.Errorf("started from %q, want %q", resp.StartedFrom, tt.start)
			}
			if resp.RecordedTicks == 0 || resp.Events == 0 || resp.ToSeq-resp.FromSeq+1 != uint64(resp.Events) {
				t.Errorf("%d recorded ticks; %d events, seq %d to %d", resp.RecordedTicks, resp.Events, resp.FromSeq, resp.ToSeq)
			}
		})
	}
}

// whatif works on the database itself and through a running serve, says
// the same both ways, and leaves the database as it was.
func TestWhatIfCLI(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rcv := newHookReceiver(t, secret)
	cfg, _, t0 := flapDB(t, "notify:\n  alerts:\n    webhook:\n      url: "+rcv.URL+"/in\n      secret: "+secret+"\n")
	until := t0.Add(24 * time.Hour).Format(time.RFC3339)

	_, before, _ := cli(t, "", "log", "verify", "--json", "--config", cfg)
	check := func(how string, out string) {
		t.Helper()
		var r whatifResp
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v: %s", how, err, out)
		}
		if r.Total.Did.Offline != 4 || r.Total.Would.Offline != 1 || r.Current.OnlineWindow != "15m" || r.WhatIf.OnlineWindow != "30m" ||
			len(r.Destinations) != 1 || r.Destinations[0] != (whatifDest{"alerts", 8, 2}) || len(r.Devices) != 2 || r.Devices[0].Name != "phone.lab" {
			t.Errorf("%s: %+v", how, r)
		}
	}
	code, out, stderr := cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", until, "--json")
	if code != 0 {
		t.Fatalf("offline: %d %s", code, stderr)
	}
	check("offline", out)
	// Without --since the counted interval starts with the kept history:
	// since is null, not the zero time.
	if !strings.Contains(out, `"since": null`) {
		t.Errorf("since without --since: %s", out)
	}
	code, out, stderr = cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", until)
	if code != 0 || !strings.Contains(out, "online window 30m (now 15m)") || !strings.Contains(out, "alerts  8 → 2") {
		t.Fatalf("offline, text: %d %s %s", code, out, stderr)
	}
	var phone string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "phone.lab") {
			phone = strings.Join(strings.Fields(l), " ")
		}
	}
	// Online, offline, quiet, addresses added and retired, notifications.
	if !strings.Contains(phone, "3 → 0 3 → 0 0 0 0 6 → 0") {
		t.Errorf("the phone's row: %q in\n%s", phone, out)
	}
	// --address-grace 0s is a rule (retire at the first complete sweep
	// that misses an address), not "not given".
	code, out, stderr = cli(t, "", "whatif", "--config", cfg, "--address-grace", "0s", "--until", until, "--json")
	if code != 0 || !strings.Contains(out, `"address_grace": "0s"`) || !strings.Contains(out, `"online_window": "15m"`) {
		t.Errorf("--address-grace 0s: %d %s %s", code, out, stderr)
	}
	if _, after, _ := cli(t, "", "log", "verify", "--json", "--config", cfg); after != before {
		t.Errorf("whatif changed the log: %s, then %s", before, after)
	}

	d := startDaemon(t, cfg)
	code, out, stderr = cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", until, "--json")
	d.stop()
	if code != 0 {
		t.Fatalf("through serve: %d %s", code, stderr)
	}
	check("through serve", out)

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"whatif"}, exitUsage, "needs --online-window"},
		{[]string{"whatif", "--online-window", "-5m"}, exitUsage, "cannot be negative"},
		{[]string{"whatif", "--online-window", "soon"}, exitUsage, "want a whole number followed by s, m or h"},
		{[]string{"whatif", "--online-window", "1.5h"}, exitUsage, "want a whole number"},
		{[]string{"whatif", "--online-window", "1h30m"}, exitUsage, "90m"},
		{[]string{"whatif", "--address-grace", "2d"}, exitUsage, "write 48h"},
		{[]string{"whatif", "--online-window", "0s"}, exitUsage, "longer than 0"},
		{[]string{"whatif", "--online-window", "30m", "--since", "2026-11-02", "--until", "2026-11-01"}, exitUsage, "is not before"},
		{[]string{"whatif", "--address-grace", "1h", "extra"}, exitUsage, "takes no arguments"},
		{[]string{"whatif", "--address-grace", "1h", "--since", "2099-01-01T00:00:00Z"}, exitUser, "is not in the past"},
	} {
		code, _, stderr := cli(t, "", append(tc.args, "--config", cfg)...)
		if code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("%q: exit %d %q, want %d %q", tc.args, code, stderr, tc.code, tc.err)
		}
	}
}

// TestWhatIfRecordedRules: when the log's rules at the end of the range
// (inventory.rules_set) are not the configuration's, whatif says so:
// what did happen followed the recorded ones.
func TestWhatIfRecordedRules(t *testing.T) {
	cfg, c, t0 := flapDB(t, "")
	st, err := store.Open(c.DBFile(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := events.MustNew(events.KindPresenceRulesSet, events.PresenceRulesSet{OnlineWindowS: 3600, AddressGraceS: 6 * 3600}, t0.Add(23*time.Hour))
	ev.Source, ev.Actor = "config", "config"
	if _, err := st.Append(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	st.Close()
	until := t0.Add(24 * time.Hour).Format(time.RFC3339)
	code, out, stderr := cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", until, "--json")
	var r whatifResp
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("whatif: %d %s %s", code, out, stderr)
	}
	if r.Recorded == nil || *r.Recorded != (whatifRules{"1h", "6h"}) || r.Current.OnlineWindow != "15m" {
		t.Errorf("recorded %+v, current %+v: want the log's 1h beside the configured 15m", r.Recorded, r.Current)
	}
	code, out, _ = cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", until)
	if code != 0 || !strings.Contains(out, "the log's rules at the end were online window 1h") {
		t.Errorf("text: %d %s", code, out)
	}
	// Before the event, nothing recorded: no note.
	code, out, _ = cli(t, "", "whatif", "--config", cfg, "--online-window", "30m", "--until", t0.Add(12*time.Hour).Format(time.RFC3339), "--json")
	if code != 0 || strings.Contains(out, `"recorded"`) {
		t.Errorf("before the rules event: %d %s", code, out)
	}
}
