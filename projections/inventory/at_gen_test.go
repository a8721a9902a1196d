package inventory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/presence"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
)

// histLog describes a generated history (genHistory).
type histLog struct {
	devices int           // 80 % stable, 15 % phones, 5 % laptops
	days    int           // of 5-minute sweeps
	keep    time.Duration // the retention purge's history cut, this far back (hourly); 0: none
	// deleteAt, when set, purges the devices last seen before it (one
	// retention.purged with devices_before, a day after it).
	deleteAt time.Time
	// merges, when set, merges two listed devices every 7 hours and
	// separates the oldest merge still standing 3 hours later.
	merges bool
}

// genHistory writes a log as serve records it, into st, with inv (run by
// its own runner) as the presence clock's inventory:
//   - stable devices, each missing one sweep in 500 (a lost probe); a
//     quarter named by DNS, one of them renamed every day;
//   - phones away 08:00–17:00 on weekdays (each with its own offset) and
//     dozing now and then at home (2 % of sweeps start a gap of 2 to 5
//     sweeps);
//   - laptops present 09:00–18:00 with a new address every day;
//   - one stable device in 10 stops answering after the first day;
//   - hourly port scans of a twelfth of the stable devices (ports open
//     and close), an edit every 3 hours (label, group, notes, ignored,
//     set and cleared), a watch set or dropped every 5 hours;
//   - the presence clock ticking 2 s after each deadline, the retention
//     purge every hour.
//
// It returns the time of the end.
func genHistory(tb testing.TB, st *store.Store, inv *inventory.Inventory, t0 time.Time, g histLog) time.Time {
	tb.Helper()
	run, err := runner.New(st, []runner.Projection{inv}, runner.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	clock := presence.NewClock(st, inv, nil)
	sink := ingest.NewSink(st)
	rng := rand.New(rand.NewPCG(13, uint64(g.devices)))
	pfx := netip.MustParsePrefix("10.20.0.0/20")
	addr := func(n int) netip.Addr { return netip.AddrFrom4([4]byte{10, 20, byte(n / 250), byte(n%250 + 2)}) }
	stable, phones := g.devices*80/100, g.devices*15/100
	laptops := g.devices - stable - phones
	doze := make([]int, phones)
	offset := make([]time.Duration, phones)
	for k := range offset {
		offset[k] = time.Duration(rng.IntN(120)) * time.Minute
	}
	appendEv := func(e events.Envelope) {
		if _, err := st.Append(ctx, e); err != nil {
			tb.Fatal(err)
		}
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
	// someDevice picks a device of the inventory now, by a stable order.
	someDevice := func() string {
		p, err := inv.ListDevices(ctx, projections.DeviceFilter{Sort: "first_seen", Limit: 50})
		if err != nil || len(p.Items) == 0 {
			return ""
		}
		return p.Items[rng.IntN(len(p.Items))].ID
	}
	ports := [][]uint16{{22}, {22, 80}, {80, 443}, {}, {22, 443, 8080}}
	devicesPurged := false
	var merged [][2]string // standing merges, oldest first: device, into
	for i := range g.days * 288 {
		fin := t0.Add(time.Duration(i) * 5 * time.Minute)
		tickUntil(fin)
		day, tod := i/288, time.Duration(i%288)*5*time.Minute
		if i%12 == 11 && g.keep > 0 {
			cut := fin.Add(-g.keep)
			p := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &cut, Counts: map[string]int{}}, fin.Add(-time.Second))
			p.Source, p.Actor = "retention", "retention"
			appendEv(p)
		}
		if !g.deleteAt.IsZero() && !devicesPurged && fin.After(g.deleteAt.Add(24*time.Hour)) {
			devicesPurged = true
			plan, ids, err := inv.PurgePlan(ctx, inventory.Cutoffs{Devices: &g.deleteAt})
			if err != nil {
				tb.Fatal(err)
			}
			if len(ids) == 0 {
				pg, _ := inv.ListDevices(ctx, projections.DeviceFilter{Sort: "last_seen", Limit: 8})
				for _, d := range pg.Items {
					tb.Log(d.ID, d.Name, d.LastSeen, d.Label, d.Group, d.Notes, d.Ignored, d.Watched)
				}
				tb.Fatalf("no device to purge before %s: %v", g.deleteAt, plan)
			}
			p := events.MustNew(events.KindRetentionPurged, events.RetentionPurged{DevicesBefore: &g.deleteAt, Counts: plan, DeletedDevices: ids}, fin.Add(-time.Second))
			p.Source, p.Actor = "retention", "retention"
			appendEv(p)
		}
		sw := &sources.Sweep{ScanID: strconv.Itoa(i), Started: fin.Add(-20 * time.Second), Finished: fin,
			Networks: []netip.Prefix{pfx}, ProbesSent: 4000, Complete: true}
		add := func(n int, ip netip.Addr) {
			h := &sources.Host{IP: ip, Network: pfx, Via: sources.ViaICMP, MAC: net.HardwareAddr{0x02, 0x20, 0, 0, byte(n >> 8), byte(n)},
				RTT: time.Duration(300+rng.IntN(3000)) * time.Microsecond}
			if n%4 == 0 {
				name := fmt.Sprintf("host-%d.lab", n)
				if v := (day + n) % (stable + 1); n < stable && v < day+1 && v%7 == 0 {
					name = fmt.Sprintf("host-%d-v%d.lab", n, day)
				}
				h.Names = map[string]string{"dns": name}
			}
			sw.Hosts = append(sw.Hosts, h)
		}
		for n := range stable {
			if n%10 == 7 && day >= 1 {
				continue // gone
			}
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
		if i%12 == 6 {
			ps := events.PortScanCompleted{ScanID: "p" + strconv.Itoa(i), Started: fin.Add(10 * time.Second), Finished: fin.Add(40 * time.Second),
				Ports: "22,80,443,8080", Complete: true}
			for n := (i / 12) % 12; n < stable; n += 12 {
				if n%10 == 7 && day >= 1 {
					continue // gone
				}
				ps.Results = append(ps.Results, events.PortResult{IP: addr(n).String(), Open: ports[(n+i/48)%len(ports)]})
			}
			ps.Targets, ps.ProbesSent = len(ps.Results), 4*len(ps.Results)
			e := events.MustNew(events.KindPortScanCompleted, ps, ps.Finished)
			e.Source = "ports:lab"
			appendEv(e)
		}
		if i%36 == 20 {
			if id := someDevice(); id != "" {
				var ed events.DeviceEdited
				switch rng.IntN(5) {
				case 0:
					ed.Label = ptrTo(fmt.Sprintf("label %d", i))
				case 1:
					ed.Group = ptrTo([]string{"servers", "iot", "family"}[rng.IntN(3)])
				case 2:
					ed.Notes = ptrTo("note " + strconv.Itoa(i))
				case 3:
					ed.Ignored = ptrTo(rng.IntN(2) == 0)
				default:
					ed.Cleared = []string{"label", "group"}
				}
				e := events.MustNew(events.KindDeviceEdited, ed, fin.Add(time.Minute))
				e.Source, e.Actor, e.Device = "api", "token:t1", id
				appendEv(e)
			}
		}
		if g.merges && i%84 == 40 {
			a, b := someDevice(), someDevice()
			if a != "" && b != "" && a != b {
				e := events.MustNew(events.KindDeviceMerged, events.DeviceMerged{Device: a, Into: b}, fin.Add(3*time.Minute))
				e.Source, e.Actor, e.Device = "api", "token:t1", b
				appendEv(e)
				merged = append(merged, [2]string{a, b})
			}
		}
		if g.merges && i%84 == 76 && len(merged) > 0 {
			m := merged[0]
			merged = merged[1:]
			e := events.MustNew(events.KindDeviceUnmerged, events.DeviceUnmerged{Device: m[0], Into: m[1]}, fin.Add(3*time.Minute))
			e.Source, e.Actor, e.Device = "api", "token:t1", m[1]
			appendEv(e)
		}
		if i%60 == 30 {
			if id := someDevice(); id != "" {
				e := events.MustNew(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: rng.IntN(3) != 0}, fin.Add(2*time.Minute))
				e.Source, e.Actor, e.Device = "api", "token:t1", id
				appendEv(e)
			}
		}
	}
	end := t0.Add(time.Duration(g.days) * 24 * time.Hour)
	tickUntil(end)
	return end
}

func ptrTo[T any](v T) *T { return &v }
