package flowlistener

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources"
	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
	"github.com/jocasta/jocasta/sources/scheduler"
)

// recorder is a scheduler.Sink keeping every run.
type recorder struct {
	mu   sync.Mutex
	runs []sources.Run
	got  chan struct{}
}

func (r *recorder) Record(_ context.Context, run sources.Run) error {
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	return nil
}

func (r *recorder) windows() []*sources.FlowWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*sources.FlowWindow
	for _, run := range r.runs {
		if w, ok := run.Result.(*sources.FlowWindow); ok {
			out = append(out, w)
		}
	}
	return out
}

// start runs a listener on 127.0.0.1:0 through the real scheduler and
// returns its address and a stop function that waits for the scheduler.
func start(t *testing.T, exporters []netip.Addr, window time.Duration) (*net.UDPAddr, *recorder, func()) {
	t.Helper()
	l, err := New("test", Config{Enabled: true, Listen: "127.0.0.1:0", Exporters: exporters}, Options{Window: window})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{got: make(chan struct{}, 1)}
	s := &scheduler.Scheduler{Sink: rec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, []sources.Instance{{Source: "flowlistener:test", Kind: "flowlistener", Listener: l}})
	}()
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	a, err := l.Addr(actx)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("scheduler: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the listener did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return a.(*net.UDPAddr), rec, stop
}

func send(t *testing.T, from string, to *net.UDPAddr, datagrams ...[]byte) {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, d := range datagrams {
		if _, err := c.Write(d); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListenerWindows(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr, rec, stop := start(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, time.Hour)
	r1 := rec_(lan, wan, 50000, 443, 1500, 10)
	r2 := rec_(lan, wan, 50001, 443, 500, 5) // same row: same service port
	send(t, "127.0.0.1", addr,
		fg.NewV9(1, 0).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes(),
		fg.NewV9(2, 0).Data(256, fg.V4, []fg.Rec{r2}, 0).Bytes(),
		fg.V5(10, 0, []fg.Rec{rec_(wan, lan, 53, 40000, 80, 1)}),
	)
	send(t, "127.0.0.2", addr, fg.V5(1, 0, []fg.Rec{r1})) // not an exporter
	// Loopback delivers at once; the stop flushes what arrived.
	time.Sleep(200 * time.Millisecond)
	stop()
	ws := rec.windows()
	if len(ws) != 1 {
		t.Fatalf("%d windows, want the final one", len(ws))
	}
	w := ws[0]
	if !w.Final || !w.First || w.Complete || w.Datagrams != 3 || w.Flows != 3 {
		t.Fatalf("window %+v", w)
	}
	if w.Drops["not_exporter"] != 1 || len(w.Errors) != 1 {
		t.Fatalf("drops %v errors %v", w.Drops, w.Errors)
	}
	want := []sources.FlowRow{
		{Src: lan, Dst: wan, Proto: 6, Port: 443, Bytes: 2000, Packets: 15, Flows: 2},
		{Src: wan, Dst: lan, Proto: 6, Port: 53, Bytes: 80, Packets: 1, Flows: 1},
	}
	if w.NumRows() != len(want) {
		t.Fatalf("rows %+v", w.Rows)
	}
	for i := range want {
		if got := w.Rows.Row(i); got != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got, want[i])
		}
	}
	if len(w.Exporters) != 1 || w.Exporters[0].Templates != 1 || len(w.Exporters[0].Versions) != 2 {
		t.Fatalf("exporters %+v", w.Exporters)
	}
}

// Windows are emitted on the ticker, each with only its own flows; an
// idle window emits nothing.
func TestListenerTicks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr, rec, stop := start(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 100*time.Millisecond)
	send(t, "127.0.0.1", addr, fg.V5(1, 0, []fg.Rec{rec_(lan, wan, 1, 2, 3, 4)}))
	select {
	case <-rec.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no window")
	}
	time.Sleep(350 * time.Millisecond) // idle windows
	send(t, "127.0.0.1", addr, fg.V5(2, 0, []fg.Rec{rec_(lan, wan, 1, 2, 3, 4)}))
	time.Sleep(250 * time.Millisecond)
	stop()
	ws := rec.windows()
	var flows uint64
	for _, w := range ws[:len(ws)-1] {
		if w.Datagrams == 0 {
			t.Fatalf("an idle window was emitted: %+v", w)
		}
		flows += w.Flows
	}
	if len(ws) < 3 || !ws[0].First || ws[1].First || flows != 2 || ws[len(ws)-1].Flows != 0 || !ws[len(ws)-1].Final {
		for _, w := range ws {
			t.Logf("%+v", w)
		}
		t.Fatalf("%d windows", len(ws))
	}
}

func TestListenerBindFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	l, err := New("busy", Config{Enabled: true, Listen: pc.LocalAddr().String(), Exporters: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{got: make(chan struct{}, 1)}
	s := &scheduler.Scheduler{Sink: rec}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-rec.got; cancel() }()
	if err := s.Run(ctx, []sources.Instance{{Source: "flowlistener:busy", Kind: "flowlistener", Listener: l}}); err != nil {
		t.Fatal(err)
	}
	if len(rec.runs) != 1 || rec.runs[0].Err == nil || rec.runs[0].Result != nil {
		t.Fatalf("a listener that cannot bind was recorded as %+v", rec.runs)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []Config{{Enabled: true, Listen: ":2055"}, {Enabled: true, Listen: "127.0.0.1:0"}} {
		if _, err := New("x", c, Options{}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func rec_(src, dst netip.Addr, sport, dport uint16, bytes, pkts uint64) fg.Rec {
	r := rec(src, dst, sport, dport, bytes, pkts)
	return r
}

// windowListener is a listener that is not bound: tests feed its state
// with handle and cut windows with window, on their own clock.
func windowListener(t *testing.T, exporters ...netip.Addr) (*Listener, *state, *strings.Builder) {
	t.Helper()
	var log strings.Builder
	l, err := New("test", Config{Enabled: true, Listen: "127.0.0.1:0", Exporters: exporters},
		Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l.addr = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2055}
	return l, l.newState(), &log
}

// A window lists only the exporters heard from in it; the state of the
// others (templates) carries over to the window they are heard again.
func TestWindowExporters(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	l, st, log := windowListener(t, a, b)
	r1 := rec_(lan, wan, 50000, 443, 1500, 10)
	l.handle(st, a, fg.NewV9(1, 0).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes(), t0)
	l.handle(st, b, fg.V5(0, 0, []fg.Rec{r1}), t0)
	w1 := l.window(st, t0, t0.Add(time.Minute), true, 0)
	l.handle(st, b, fg.V5(1, 0, []fg.Rec{r1}), t0.Add(61*time.Second))
	log.Reset()
	w2 := l.window(st, t0.Add(time.Minute), t0.Add(2*time.Minute), false, 0)
	l.handle(st, a, fg.NewV9(2, 0).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes(), t0.Add(121*time.Second))
	w3 := l.window(st, t0.Add(2*time.Minute), t0.Add(3*time.Minute), false, 0)
	addrs := func(w *sources.FlowWindow) (out []netip.Addr) {
		for _, e := range w.Exporters {
			out = append(out, e.Addr)
		}
		return out
	}
	for _, c := range []struct {
		name string
		w    *sources.FlowWindow
		want []netip.Addr
	}{{"window 1", w1, []netip.Addr{a, b}}, {"window 2", w2, []netip.Addr{b}}, {"window 3", w3, []netip.Addr{a}}} {
		if got := addrs(c.w); !slices.Equal(got, c.want) {
			t.Errorf("%s: exporters %v, want %v", c.name, got, c.want)
		}
	}
	if len(w2.Exporters) == 1 && w2.Exporters[0].Datagrams != 1 {
		t.Errorf("window 2: %+v", w2.Exporters[0])
	}
	if !strings.Contains(log.String(), "exporters=1 ") {
		t.Errorf("window 2 logged %s", log.String())
	}
	if w3.Flows != 1 || len(w3.Exporters) != 1 || w3.Exporters[0].Templates != 1 {
		t.Errorf("window 3 (templates carry over): %+v", w3)
	}
}

// Restarts are logged and kept in the window's state, per window, with
// the exporter's held data sets;
// held sets too old are dropped when the window ends, even if the
// exporter has fallen silent.
func TestWindowRestartsAndHeld(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	l, st, log := windowListener(t, a)
	r1 := rec_(lan, wan, 50000, 443, 1500, 10)
	l.handle(st, a, fg.V5(10_000_000, 0, []fg.Rec{r1}), t0)
	l.handle(st, a, fg.V5(0, 0, []fg.Rec{r1}), t0.Add(time.Second)) // restarted
	l.handle(st, a, fg.NewV9(1, 3).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes(), t0.Add(2*time.Second))
	w := l.window(st, t0, t0.Add(time.Minute), true, 0)
	out := log.String()
	if w.LostFlows != 0 || !strings.Contains(out, "restarts=1 ") || !strings.Contains(out, "restarts=1 held=1 ") {
		t.Errorf("lost %d; log %s", w.LostFlows, out)
	}
	// And in the window's state, which the event and the scan log carry.
	if len(w.Exporters) != 1 || w.Exporters[0].Restarts != 1 || w.Exporters[0].Held != 1 {
		t.Errorf("exporters %+v: want 1 restart and 1 held set", w.Exporters)
	}
	if len(w.Drops) != 0 {
		t.Errorf("drops %v", w.Drops)
	}
	log.Reset()
	w = l.window(st, t0.Add(time.Minute), t0.Add(2*time.Minute), false, 0)
	if w.Drops["no_template"] != 1 || len(w.Exporters) != 0 || !strings.Contains(log.String(), "restarts=0 ") {
		t.Errorf("drops %v, exporters %+v; log %s", w.Drops, w.Exporters, log.String())
	}
}

// A window never spans two hours: it ends window later or at the next
// full hour, whichever comes first.
func TestWindowEnd(t *testing.T) {
	h := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		now    time.Time
		window time.Duration
		want   time.Time
		atHour bool
	}{
		{h.Add(5 * time.Minute), time.Minute, h.Add(6 * time.Minute), false},
		{h.Add(59*time.Minute + 30*time.Second), time.Minute, h.Add(time.Hour), true},
		{h.Add(59 * time.Minute), time.Minute, h.Add(time.Hour), true},
		{h, time.Minute, h.Add(time.Minute), false},
		{h.Add(10 * time.Minute), 2 * time.Hour, h.Add(time.Hour), true},
	} {
		got, atHour := windowEnd(tc.now, tc.window)
		if !got.Equal(tc.want) || atHour != tc.atHour {
			t.Errorf("windowEnd(%s, %s) = %s %v, want %s %v", tc.now.Format("15:04:05"), tc.window, got.Format("15:04:05"), atHour, tc.want.Format("15:04:05"), tc.atHour)
		}
	}
}
