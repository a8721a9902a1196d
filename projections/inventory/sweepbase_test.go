package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources"
)

// harnessLog is an ingest.Appender that applies each event to a harness
// as the runner would, with the harness's seqs.
type harnessLog struct {
	h     *harness
	bytes int
}

func (l *harnessLog) Append(_ context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	for k := range evs {
		l.h.seq++
		evs[k].Seq = l.h.seq
		evs[k].ID = fmt.Sprintf("%032x", l.h.seq)
		l.bytes += len(evs[k].Payload)
		l.h.applyEv(evs[k])
	}
	return evs, nil
}

// churnSweep is sweep n of a /24 that changes now and then: a host
// leaves, one comes, one moves, a name changes, round trips jitter.
func churnSweep(n int, fin time.Time) *sources.Sweep {
	pfx := netip.MustParsePrefix(lab)
	s := &sources.Sweep{ScanID: fmt.Sprint(n), Started: fin.Add(-5 * time.Second), Finished: fin, Networks: []netip.Prefix{pfx},
		ProbesSent: 254, Complete: n%7 != 3}
	for i := range 20 {
		if i == 5 && n%4 >= 2 { // comes and goes
			continue
		}
		ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)})
		if i == 7 && n >= 6 { // moves
			ip = netip.AddrFrom4([4]byte{10, 0, 0, 200})
		}
		h := &sources.Host{IP: ip, Network: pfx, MAC: net.HardwareAddr{0, 0x11, 0x22, 0, 0, byte(i)}, Via: sources.ViaICMP,
			RTT: time.Duration(100+(n*37+i*11)%900) * time.Microsecond}
		if i%3 == 0 {
			h.Names = map[string]string{"dns": fmt.Sprintf("h%d.lab", i)}
		}
		if i == 9 && n >= 4 {
			h.Names = map[string]string{"mdns": "renamed.local"}
		}
		if i == 12 && n%5 == 0 {
			h.Via = sources.ViaARP
		}
		s.Hosts = append(s.Hosts, h)
	}
	return s
}

// Sweeps written against their source's previous sweep build exactly the
// inventory the same sweeps written whole build, and the log holds far
// fewer bytes.
func TestSweepDifferencesEqualWholeSweeps(t *testing.T) {
	whole := newHarness(t, Options{})
	delta := newHarness(t, Options{})
	dlog := &harnessLog{h: delta}
	sink := ingest.NewSink(dlog)
	wholeBytes := 0
	for n := range 12 {
		fin := t0.Add(time.Duration(n) * 5 * time.Minute)
		e, err := ingest.SweepEvent(churnSweep(n, fin), "sweep:lab")
		if err != nil {
			t.Fatal(err)
		}
		wholeBytes += len(e.Payload)
		whole.applyEv(whole.envelope(e.Kind, mustPayload(t, e), fin, "sweep:lab", "sweep:lab", ""))
		sw := churnSweep(n, fin)
		if err := sink.Record(context.Background(), sources.Run{Instance: sources.Instance{Source: "sweep:lab", Kind: "sweep"}, Started: sw.Started, Finished: fin, Result: sw}); err != nil {
			t.Fatal(err)
		}
		whole.tick(fin.Add(time.Minute))
		delta.tick(fin.Add(time.Minute))
	}
	if d := cmp.Diff(snapshotAll(t, whole.inv), snapshotAll(t, delta.inv)); d != "" {
		t.Fatalf("the inventory from sweeps by difference differs (-whole +delta):\n%s", d)
	}
	if dlog.bytes*2 > wholeBytes {
		t.Errorf("sweeps by difference are %d bytes, whole ones %d", dlog.bytes, wholeBytes)
	}
	delta.checkReload()
}

func mustPayload(t *testing.T, e events.Envelope) events.SweepCompleted {
	t.Helper()
	var p events.SweepCompleted
	if err := events.Default.DecodeInto(e, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A difference against a sweep this inventory does not hold applies its
// whole hosts, as an incomplete sweep, and says so in the scan log.
func TestSweepDifferenceWithoutItsBase(t *testing.T) {
	h := newHarness(t, Options{})
	p := events.SweepCompleted{ScanID: "d", Started: t0, Finished: t0.Add(time.Second), Networks: []string{lab}, Complete: true,
		Base: 99, Same: []int64{0, 500, 1, 600}, Hosts: []events.SweepHost{host("10.0.0.50", "00:11:22:00:00:50")}}
	h.applyEv(h.envelope(events.KindSweepCompleted, p, p.Finished, "sweep:lab", "sweep:lab", ""))
	h.devices(1)
	sc, err := h.scans.ListScans(t.Context(), scanFilterAll())
	if err != nil {
		t.Fatal(err)
	}
	if s := sc.Items[0]; s.Complete || !strings.Contains(strings.Join(s.Errors, ";"), "base is missing") {
		t.Fatalf("%s", js(s))
	}
}

func scanFilterAll() projections.ScanFilter { return projections.ScanFilter{Limit: MaxLimit} }

// A source's last sweep is kept as the event's own responders (not a
// copy), and stored without their round trips, which references carry.
func TestSweepBaseStoredWithoutRoundTrips(t *testing.T) {
	h := newHarness(t, Options{})
	hs := host("10.0.0.5", "00:11:22:00:00:05")
	hs.RTTMicros = 1234
	h.sweep(sweepAt(t0, hs))
	var stored []events.SweepHost
	err := h.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketSweepBase)).Get([]byte("sweep:lab"))
		if v == nil {
			return fmt.Errorf("no base stored for sweep:lab")
		}
		return json.Unmarshal(v, &stored)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].IP != "10.0.0.5" || stored[0].RTTMicros != 0 {
		t.Fatalf("stored base = %+v", stored)
	}
	if b := h.inv.sweepBases["sweep:lab"]; b == nil || len(b.hosts) != 1 || b.hosts[0].RTTMicros != 1234 {
		t.Fatalf("kept base = %+v", b)
	}
}

// A loaded sweep base shares its strings with the devices (as a sweep
// applied live does), and still resolves the source's next sweep.
func TestLoadedSweepBaseSharesStrings(t *testing.T) {
	h := newHarness(t, Options{})
	var hosts []events.SweepHost
	for k := range 40 {
		hs := host(fmt.Sprintf("10.0.0.%d", k+1), fmt.Sprintf("00:11:22:00:00:%02x", k), fmt.Sprintf("dns=host-%d.lab", k))
		hs.Network = "10.0.0.0/24"
		hosts = append(hosts, hs)
	}
	h.sweep(sweepAt(t0, hosts...))
	inv := h.load()
	b := inv.sweepBases["sweep:lab"]
	if b == nil || len(b.hosts) != len(hosts) {
		t.Fatal("the base was not loaded")
	}
	same := func(a, b string) bool { return len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b) }
	for k := range b.hosts {
		bh := &b.hosts[k]
		d := inv.devs[inv.byIP[bh.IP][0].ID]
		if !same(bh.IP, d.addr(bh.IP).IP) || !same(bh.MAC, d.MAC) || len(bh.Names) != 1 || !same(bh.Names[0].Name, d.Names[0].Val.Name) {
			t.Fatalf("responder %s: its strings are copies of the device's", bh.IP)
		}
		if k > 0 && (!same(bh.Network, b.hosts[0].Network) || !same(bh.Via, b.hosts[0].Via)) {
			t.Fatalf("responder %s: network and via are not shared", bh.IP)
		}
	}
	// The next sweep, written against it (every responder the same),
	// resolves to the same responders.
	next := sweepAt(t0.Add(time.Minute))
	next.Base = b.seq
	for k := range hosts {
		next.Same = append(next.Same, int64(k), 7)
	}
	whole := inv.resolveSweep("sweep:lab", &next)
	if len(whole.Hosts) != len(hosts) || !whole.Complete {
		t.Fatalf("resolved %d hosts (complete %v), want %d", len(whole.Hosts), whole.Complete, len(hosts))
	}
	for k := range whole.Hosts {
		if got := whole.Hosts[k]; got.IP != b.hosts[k].IP || got.MAC != b.hosts[k].MAC || got.RTTMicros != 7 {
			t.Fatalf("resolved %+v", got)
		}
	}
}
