package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newCentral(t *testing.T, st *store.Store, clk *clock) *Central {
	t.Helper()
	c := NewCentral(st, CentralOptions{Allowed: []string{"a", "b"}, Log: zerolog.Nop(), Now: clk.now})
	if err := c.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func sweepEvent(t *testing.T, scan string, base uint64) events.Envelope {
	t.Helper()
	e, err := events.New(events.KindSweepCompleted, events.SweepCompleted{ScanID: scan, Complete: true, Base: base,
		Networks: []string{"10.0.0.0/24"}, Hosts: []events.SweepHost{{IP: "10.0.0.5"}}}, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	e.Source, e.Stream = "sweep:remotehost", "scan/"+scan
	return e
}

func logOf(t *testing.T, st *store.Store) []events.Envelope {
	t.Helper()
	evs, err := st.Read(1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestCentralAppendsEachObservationOnce(t *testing.T) {
	st := storetest.Open(t)
	clk := &clock{t: time.Unix(1700000100, 0)}
	c := newCentral(t, st, clk)
	ctx := context.Background()
	sw := sweepEvent(t, "s1", 0)
	read := testEvent(t, "r1")
	tests := []struct {
		name    string
		o       Observation
		wantDup bool
		wantErr error
	}{
		{"sweep", Observation{Sensor: "a", Kind: "sweep", Event: sw}, false, nil},
		{"the same sweep again", Observation{Sensor: "a", Kind: "sweep", Event: sw}, true, nil},
		{"the same id from another sensor", Observation{Sensor: "b", Kind: "sweep", Event: sw}, true, nil},
		{"a plugin's failed read", Observation{Sensor: "a", Kind: "routerapi", Event: func() events.Envelope { e := read; e.Source = "routerapi:core"; return e }()}, false, nil},
		{"unknown sensor", Observation{Sensor: "c", Kind: "sweep", Event: sweepEvent(t, "s2", 0)}, false, ErrRefused},
		{"a difference", Observation{Sensor: "a", Kind: "sweep", Event: sweepEvent(t, "s3", 7)}, false, ErrRefused},
		{"a read as a difference", Observation{Sensor: "a", Kind: "routerapi", Event: func() events.Envelope {
			e := events.MustNew(events.KindPluginRead, events.PluginRead{ScanID: "r9", Kind: "routerapi", Complete: true, Base: 3}, time.Now())
			e.Source = "routerapi:core"
			return e
		}()}, false, ErrRefused},
		{"a kind sensors do not send", Observation{Sensor: "a", Kind: "sweep", Event: func() events.Envelope {
			e := events.MustNew(events.KindDeviceEdited, events.DeviceEdited{}, time.Now())
			e.Source = "x"
			return e
		}()}, false, ErrRefused},
		{"a version this build lacks", Observation{Sensor: "a", Kind: "sweep", Event: func() events.Envelope { e := sweepEvent(t, "s4", 0); e.V = 99; return e }()}, false, ErrRefused},
		{"no source", Observation{Sensor: "a", Kind: "sweep", Event: func() events.Envelope { e := sweepEvent(t, "s5", 0); e.Source = ""; return e }()}, false, ErrRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dup, err := c.Handle(ctx, tc.o)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if dup != tc.wantDup {
				t.Fatalf("dup %v, want %v", dup, tc.wantDup)
			}
		})
	}
	evs := logOf(t, st)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(evs), evs)
	}
	if evs[0].ID != sw.ID || evs[0].Source != "sensor:a" || evs[0].Actor != "sensor:a" || !evs[0].Time.Equal(sw.Time) {
		t.Errorf("sweep appended as %+v", evs[0])
	}
	if evs[1].ID != read.ID || evs[1].Source != "sensor:a/routerapi:core" {
		t.Errorf("read appended as %+v", evs[1])
	}
	st.DB().View(func(tx *bolt.Tx) error {
		if seq, ok := SeenSeq(tx, sw.ID); !ok || seq != evs[0].Seq {
			t.Errorf("seen seq of the sweep: %d %v, want %d", seq, ok, evs[0].Seq)
		}
		if seq, ok := SeenSeq(tx, read.ID); !ok || seq != evs[1].Seq {
			t.Errorf("seen seq of the read: %d %v, want %d", seq, ok, evs[1].Seq)
		}
		return nil
	})

	// The index lost (a database rebuilt from its log): rebuilt from
	// the log, so a redelivery still appends nothing.
	if err := st.DB().Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bSeen, bSeenTime} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c2 := newCentral(t, st, clk)
	if dup, err := c2.Handle(ctx, Observation{Sensor: "a", Kind: "sweep", Event: sw}); err != nil || !dup {
		t.Fatalf("after the index was rebuilt: dup %v err %v", dup, err)
	}
	if n := len(logOf(t, st)); n != 2 {
		t.Fatalf("%d events after a redelivery, want 2", n)
	}

	// Ids are forgotten after the window, and only then.
	if n, err := c2.Forget(ctx, 100); err != nil || n != 0 {
		t.Fatalf("forget within the window: %d %v", n, err)
	}
	clk.add(8 * 24 * time.Hour)
	if n, err := c2.Forget(ctx, 100); err != nil || n != 2 {
		t.Fatalf("forget after the window: %d %v", n, err)
	}
}

func TestCentralRecordsSilence(t *testing.T) {
	st := storetest.Open(t)
	clk := &clock{t: time.Unix(1700000100, 0)}
	c := newCentral(t, st, clk)
	ctx := context.Background()
	send := func(kind, source string, ev events.Envelope) {
		t.Helper()
		ev.Source = source
		if _, err := c.Handle(ctx, Observation{Sensor: "a", Kind: kind, Interval: 10 * time.Second, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	send("sweep", "sweep:h", sweepEvent(t, "s1", 0))
	send("portscan", "sweep:h", testEvent(t, "p1"))
	send("routerapi", "routerapi:core", testEvent(t, "r1"))
	head := st.Head()

	clk.add(29 * time.Second)
	if err := c.CheckSilence(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Head() != head {
		t.Fatal("silence recorded before 3 intervals passed")
	}
	clk.add(2 * time.Second)
	if err := c.CheckSilence(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _ := st.Read(head+1, 100)
	if len(evs) != 2 {
		t.Fatalf("%d events for the silence, want one per source (2): %+v", len(evs), evs)
	}
	wantKind := map[string]string{"sensor:a": "sweep", "sensor:a/routerapi:core": "routerapi"}
	for _, e := range evs {
		var p events.ScanFailed
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if e.Kind != events.KindScanFailed || p.Kind != wantKind[e.Source] || p.Reason == "" {
			t.Errorf("silence event %s %s %+v", e.Kind, e.Source, p)
		}
	}
	cts := c.Contacts()
	if len(cts) != 2 || cts[0].Sensor != "a" || cts[0].SilentSince == nil || cts[0].Interval != 10*time.Second || cts[1].Sensor != "b" || !cts[1].Last.IsZero() {
		t.Fatalf("contacts: %+v", cts)
	}

	// Once per silence.
	clk.add(time.Minute)
	c.CheckSilence(ctx)
	if st.Head() != head+2 {
		t.Fatalf("silence recorded twice: head %d", st.Head())
	}
	// A message ends it; the state survives a restart.
	send("sweep", "sweep:h", sweepEvent(t, "s2", 0))
	if c.Contacts()[0].SilentSince != nil {
		t.Fatal("still silent after a message")
	}
	c2 := newCentral(t, st, clk)
	if ct := c2.Contacts()[0]; !ct.Last.Equal(clk.now()) || len(ct.Sources) != 2 {
		t.Fatalf("state after restart: %+v", ct)
	}
}

// TestCentralWritesSweepsAsDifferences: a sensor sends whole sweeps; the
// central appends the first of each source whole and the next ones
// against it (Base, Same), which resolve to exactly what was sent.
func TestCentralWritesSweepsAsDifferences(t *testing.T) {
	st := storetest.Open(t)
	clk := &clock{t: time.Unix(1700000100, 0)}
	c := newCentral(t, st, clk)
	ctx := context.Background()
	hosts := func(n int, changed string) []events.SweepHost {
		var hs []events.SweepHost
		for i := n; i > 0; i-- { // out of order: the central sorts
			h := events.SweepHost{IP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256), RTTMicros: int64(100 + i)}
			if h.IP == changed {
				h.MAC = "02:ff:ff:ff:ff:ff"
			}
			hs = append(hs, h)
		}
		return hs
	}
	send := func(sensor, scan string, hs []events.SweepHost) {
		t.Helper()
		e, err := events.New(events.KindSweepCompleted, events.SweepCompleted{ScanID: scan, Complete: true, Networks: []string{"10.0.0.0/16"}, Hosts: hs}, clk.now())
		if err != nil {
			t.Fatal(err)
		}
		e.Source, e.Stream = "sweep:remote", "scan/"+scan
		if dup, err := c.Handle(ctx, Observation{Sensor: sensor, Kind: "sweep", Event: e}); err != nil || dup {
			t.Fatalf("%s: dup %v err %v", scan, dup, err)
		}
	}
	sent := [][]events.SweepHost{hosts(300, ""), hosts(300, "10.0.0.7"), hosts(301, ""), hosts(10, "")}
	send("a", "s0", sent[0])
	send("b", "other", hosts(5, "")) // another sensor's source: its own base
	send("a", "s1", sent[1])
	send("a", "s2", sent[2])
	c = newCentral(t, st, clk) // a restart: the next sweep is whole again
	send("a", "s3", sent[3])

	var base []events.SweepHost
	var baseSeq uint64
	i := 0
	tests := []struct {
		wantBase       bool
		wantWholeHosts int
	}{{false, 300}, {true, 1}, {true, 2}, {false, 10}}
	for _, e := range logOf(t, st) {
		if e.Source != "sensor:a" {
			continue
		}
		var p events.SweepCompleted
		if err := events.Default.DecodeInto(e, &p); err != nil {
			t.Fatal(err)
		}
		tc := tests[i]
		if (p.Base != 0) != tc.wantBase || len(p.Hosts) != tc.wantWholeHosts {
			t.Fatalf("sweep %d: base %d, %d whole hosts; want base %v, %d whole", i, p.Base, len(p.Hosts), tc.wantBase, tc.wantWholeHosts)
		}
		if p.Base != 0 && p.Base != baseSeq {
			t.Fatalf("sweep %d: base %d, want the previous sweep's seq %d", i, p.Base, baseSeq)
		}
		got, err := events.ResolveSweep(&p, base)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]events.SweepHost(nil), sent[i]...)
		events.SortSweepHosts(want)
		if len(got) != len(want) {
			t.Fatalf("sweep %d resolves to %d hosts, want %d", i, len(got), len(want))
		}
		for k := range want {
			if !events.SameResponder(&got[k], &want[k]) || got[k].RTTMicros != want[k].RTTMicros {
				t.Fatalf("sweep %d host %d: %+v, want %+v", i, k, got[k], want[k])
			}
		}
		base, baseSeq = got, e.Seq
		i++
	}
	if i != len(tests) {
		t.Fatalf("%d sweeps of sensor a in the log, want %d", i, len(tests))
	}
}

// TestCentralWritesReadsAsDifferences: a sensor sends its plugin reads
// whole and the central appends them as the local sink would have (the
// difference from the source's last appended read: ingest.ReadDelta),
// the first read after a start, and the one after a duplicate, whole.
// Each read's payload is compared with the one the local sink appends
// for the same read.
func TestCentralWritesReadsAsDifferences(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1700000100, 0)}
	cst, lst := storetest.Open(t), storetest.Open(t)
	c := newCentral(t, cst, clk)
	sink := ingest.NewSink(lst)
	read := func(n int, complete bool, mod func(i int, h *sources.ReadHost)) *sources.HostRead {
		r := &sources.HostRead{ScanID: fmt.Sprint("r", clk.now().Unix()), Started: clk.now(), Finished: clk.now(), Complete: complete,
			Rows: n, Peer: sources.Peer{Name: "core", Model: "RB5009"}}
		for i := range n {
			h := &sources.ReadHost{MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256), Seen: true, Signal: -60,
				IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(i%250 + 1)})}, Names: map[string]string{"dhcp": fmt.Sprint("h-", i)}}
			if mod != nil {
				mod(i, h)
			}
			r.Hosts = append(r.Hosts, h)
		}
		return r
	}
	var sent []events.Envelope // what the sensor sent, to send one again
	send := func(r *sources.HostRead) {
		t.Helper()
		clk.add(time.Minute)
		run := sources.Run{Instance: sources.Instance{Source: "routerapi:core", Kind: "routerapi"}, Result: r}
		if err := sink.Record(ctx, run); err != nil {
			t.Fatal(err)
		}
		e, err := ingest.RunEvent(run)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, e)
		if dup, err := c.Handle(ctx, Observation{Sensor: "a", Kind: "routerapi", Event: e}); err != nil || dup {
			t.Fatalf("%s: dup %v err %v", r.ScanID, dup, err)
		}
	}
	send(read(200, true, nil))
	send(read(200, true, nil)) // stable
	send(read(201, true, func(i int, h *sources.ReadHost) {
		switch i {
		case 7:
			h.IPs = []netip.Addr{netip.MustParseAddr("10.9.9.9")}
		case 8:
			h.Signal = -62 // within the slack: recorded as before
		case 9:
			h.Signal = -75
		case 10:
			h.MAC = "02:ff:ff:ff:ff:ff" // one gone, one new
		}
	}))
	send(read(3, false, nil)) // incomplete: removes nothing
	// The last observation again (a redelivery): a duplicate, after which
	// the next read is whole, as after a start.
	if dup, err := c.Handle(ctx, Observation{Sensor: "a", Kind: "routerapi", Event: sent[len(sent)-1]}); err != nil || !dup {
		t.Fatalf("redelivery: dup %v err %v", dup, err)
	}
	sink = ingest.NewSink(lst)
	send(read(200, true, nil))
	c, sink = newCentral(t, cst, clk), ingest.NewSink(lst) // a restart
	send(read(200, true, nil))
	send(read(200, true, nil))

	reads := func(st *store.Store) (out []events.PluginRead, seqs []uint64) {
		for _, e := range logOf(t, st) {
			if e.Kind != events.KindPluginRead || !strings.HasPrefix(e.Source, "sensor:a") && e.Source != "routerapi:core" {
				continue
			}
			var p events.PluginRead
			if err := events.Default.DecodeInto(e, &p); err != nil {
				t.Fatal(err)
			}
			out, seqs = append(out, p), append(seqs, e.Seq)
		}
		return out, seqs
	}
	got, gotSeqs := reads(cst)
	want, wantSeqs := reads(lst)
	if len(got) != len(want) || len(got) != 7 {
		t.Fatalf("%d reads appended by the central, %d by the sink, want 7", len(got), len(want))
	}
	wholes := []bool{true, false, false, true, true, true, false}
	for k := range want {
		g, w := got[k], want[k]
		if (g.Base == 0) != wholes[k] || (w.Base == 0) != wholes[k] {
			t.Errorf("read %d: base %d (sink %d), want whole %v", k, g.Base, w.Base, wholes[k])
		}
		if g.Base != 0 && g.Base != gotSeqs[k-1] {
			t.Errorf("read %d: base %d, want the previous read's seq %d", k, g.Base, gotSeqs[k-1])
		}
		if w.Base != 0 && w.Base != wantSeqs[k-1] {
			t.Errorf("sink read %d: base %d, want %d", k, w.Base, wantSeqs[k-1])
		}
		g.Base, w.Base = 0, 0
		if gj, wj := mustJSON(t, g), mustJSON(t, w); gj != wj {
			t.Errorf("read %d: the central appended\n%s\nthe sink\n%s", k, gj, wj)
		}
	}
	if n := len(got[1].Set) + len(got[1].Gone); n != 0 || got[1].Peer != nil {
		t.Errorf("the stable read carries %d hosts and peer %v, want none", n, got[1].Peer)
	}
	if len(got[2].Set) != 4 || len(got[2].Gone) != 1 {
		t.Errorf("the changed read sets %d hosts and removes %d, want 4 (moved, signal, renamed, the 201st) and 1", len(got[2].Set), len(got[2].Gone))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
