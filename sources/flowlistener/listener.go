package flowlistener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultWindow           = 60 * time.Second
	DefaultTemplateLifetime = 30 * time.Minute
	DefaultMaxRows          = 500_000
	DefaultRcvBuf           = 32 << 20
)

// Options are the listener's settings that are not configuration keys:
// tests shorten the window, the bench raises the limits.
type Options struct {
	// Window is the flush window: one Result per window. Default 60s.
	Window time.Duration
	// TemplateLifetime drops a template not refreshed for that long
	// (v9 and IPFIX exporters over UDP resend them). Default 30m.
	TemplateLifetime time.Duration
	// MaxRows bounds the rows of one window (memory); flows of new rows
	// past it are dropped and counted as table_full. Default 500,000.
	MaxRows int
	// RcvBuf is the socket receive buffer asked for. Default 32 MiB.
	RcvBuf int
	// Log gets one line per window with the listener's state.
	Log *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.TemplateLifetime <= 0 {
		o.TemplateLifetime = DefaultTemplateLifetime
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	o.MaxRows = min(o.MaxRows, 1<<30) // the table's index holds int32s
	if o.RcvBuf <= 0 {
		o.RcvBuf = DefaultRcvBuf
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Listener is one flowlistener instance: a sources.Listener.
type Listener struct {
	name    string
	cfg     Config
	opts    Options
	allowed map[netip.Addr]struct{}

	// ready is closed once the socket is bound (tests read Addr then).
	ready chan struct{}
	addr  net.Addr
}

// New returns the listener of instance name with its configuration.
func New(name string, cfg Config, opts Options) (*Listener, error) {
	// The loader has validated the configuration (Config.Validate); a
	// listen address that cannot be bound fails Listen, which the
	// scheduler records. Port 0 (any free port) is allowed here for tests.
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if len(cfg.Exporters) == 0 {
		return nil, fmt.Errorf("flowlistener %s: exporters: %w", name, errNoExporters)
	}
	opts.setDefaults()
	l := &Listener{name: name, cfg: cfg, opts: opts, allowed: map[netip.Addr]struct{}{}, ready: make(chan struct{})}
	for _, a := range cfg.Exporters {
		l.allowed[a.Unmap()] = struct{}{}
	}
	return l, nil
}

var errNoExporters = errors.New("none listed: every datagram would be dropped")

// Addr waits until the socket is bound (or ctx ends) and returns its
// address.
func (l *Listener) Addr(ctx context.Context) (net.Addr, error) {
	select {
	case <-l.ready:
		return l.addr, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// state is what the reader goroutine and the flusher share, under mu.
type state struct {
	mu        sync.Mutex
	dec       decoder
	tab       *table
	exporters map[netip.Addr]*exporter
	datagrams uint64
	strangers map[netip.Addr]uint64 // not-exporter sources this window, bounded
}

const maxStrangers = 16

// Listen implements sources.Listener: it binds the socket, reads
// datagrams until ctx is done, and emits one FlowWindow per window (none
// for a window in which nothing arrived), then a final one.
func (l *Listener) Listen(ctx context.Context, emit func(sources.Result)) error {
	rcvbuf := 0
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { rcvbuf = growRcvBuf(int(fd), l.opts.RcvBuf) })
	}}
	pc, err := lc.ListenPacket(ctx, "udp", l.cfg.Listen)
	if err != nil {
		return fmt.Errorf("flowlistener %s: listen on %s: %w", l.name, l.cfg.Listen, err)
	}
	conn := pc.(*net.UDPConn)
	l.addr = conn.LocalAddr()
	close(l.ready)
	log := l.opts.Log
	log.Info("flow listener bound", "listen", l.addr.String(), "rcvbuf", rcvbuf, "exporters", len(l.allowed), "window", l.opts.Window.String())

	st := l.newState()
	var wg sync.WaitGroup
	wg.Go(func() { l.read(conn, st) })

	start, first := l.opts.Now(), true
	cut, atHour := windowEnd(start, l.opts.Window)
	timer := time.NewTimer(cut.Sub(start))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = conn.Close()
			wg.Wait()
			w := l.window(st, start, l.opts.Now(), first, rcvbuf)
			w.Final, w.Complete = true, false
			emit(w)
			return nil
		case <-timer.C:
			now := l.opts.Now()
			end := now
			if atHour && cut.Before(now) {
				// The hour's last window ends on the hour, so that its
				// rows count in the hour they belong to (the few that
				// arrived in the milliseconds since count with them).
				end = cut
			}
			if end.Before(start) {
				end = start // the clock stepped back
			}
			if w := l.window(st, start, end, first, rcvbuf); w.Datagrams > 0 || len(w.Drops) > 0 {
				emit(w)
				start, first = end, false
			} // else nothing arrived: nothing to record
			cut, atHour = windowEnd(now, l.opts.Window)
			timer.Reset(max(cut.Sub(l.opts.Now()), 0))
		}
	}
}

// windowEnd is when a window from now ends: window later, or at the next
// full hour if that comes first (a window never spans two hours, so the
// traffic projection, which counts a window's rows in the hour it ends
// in, puts every flow in its hour); atHour says which.
func windowEnd(now time.Time, window time.Duration) (time.Time, bool) {
	end := now.Add(window)
	if hour := now.Truncate(time.Hour).Add(time.Hour); !end.Before(hour) {
		return hour, true
	}
	return end, false
}

func (l *Listener) newState() *state {
	st := &state{tab: newTable(l.opts.MaxRows), exporters: map[netip.Addr]*exporter{}, strangers: map[netip.Addr]uint64{}}
	st.dec.lifetime = l.opts.TemplateLifetime
	st.dec.sink = func(f *flow) {
		if !st.tab.add(f) {
			st.dec.drops[dropTableFull]++
		}
	}
	return st
}

// read is the reader goroutine: one datagram at a time into the decoder,
// under the state's lock (taken once per datagram, never per flow).
func (l *Listener) read(conn *net.UDPConn, st *state) {
	buf := make([]byte, 65536)
	for {
		n, ap, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error (ICMP unreachable on some kernels)
		}
		l.handle(st, ap.Addr().Unmap(), buf[:n], l.opts.Now())
	}
}

// handle takes one datagram from src.
func (l *Listener) handle(st *state, src netip.Addr, b []byte, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := l.allowed[src]; !ok {
		st.dec.drops[dropNotExporter]++
		if _, seen := st.strangers[src]; seen || len(st.strangers) < maxStrangers {
			st.strangers[src]++
		}
		return
	}
	ex := st.exporters[src]
	if ex == nil {
		ex = &exporter{addr: src, domains: map[uint64]*domain{}}
		st.exporters[src] = ex
	}
	st.datagrams++
	st.dec.datagram(ex, b, now)
}

// window takes the state of the window that ends at end and resets the
// per-window counters (templates and sequence state carry over). Its
// exporters are those heard from in the window; held data sets too old to
// wait for their template are dropped (no_template) first.
func (l *Listener) window(st *state, start, end time.Time, first bool, rcvbuf int) *sources.FlowWindow {
	st.mu.Lock()
	for _, ex := range st.exporters {
		st.dec.expire(ex, end)
	}
	rows := st.tab.drain()
	w := &sources.FlowWindow{
		ScanID:    fmt.Sprintf("flowlistener:%s@%d", l.name, end.UnixNano()),
		Started:   start,
		Finished:  end,
		Complete:  true,
		Listen:    l.addr.String(),
		First:     first,
		RcvBuf:    rcvbuf,
		Datagrams: st.datagrams,
		Flows:     st.dec.flows,
		LostFlows: st.dec.lost,
		Rows:      rows,
	}
	for i, n := range st.dec.drops {
		if n > 0 {
			if w.Drops == nil {
				w.Drops = map[string]uint64{}
			}
			w.Drops[dropNames[i]] = n
		}
	}
	strangers := make([]string, 0, len(st.strangers))
	for a := range st.strangers {
		strangers = append(strangers, a.String())
	}
	var restarts uint64
	for _, ex := range st.exporters {
		if ex.datagrams == 0 {
			ex.endWindow()
			continue // not heard from this window
		}
		restarts += ex.restarts
		fe := sources.FlowExporter{Addr: ex.addr, Domains: len(ex.domains), Datagrams: ex.datagrams, Flows: ex.flows, LostFlows: ex.lost, Sampling: 1,
			Restarts: ex.restarts, Held: ex.held()}
		for bit, v := range []int{5, 9, 10} {
			if ex.versions&(1<<bit) != 0 {
				fe.Versions = append(fe.Versions, v)
			}
		}
		for _, dm := range ex.domains {
			fe.Templates += len(dm.templates)
			fe.Sampling = max(fe.Sampling, dm.sampling)
			for _, r := range dm.samplers {
				fe.Sampling = max(fe.Sampling, r)
			}
			for _, r := range dm.ifRates {
				fe.Sampling = max(fe.Sampling, r)
			}
		}
		w.Exporters = append(w.Exporters, fe)
		ex.endWindow()
	}
	st.datagrams, st.dec.flows, st.dec.lost = 0, 0, 0
	st.dec.drops = [nDrops]uint64{}
	clear(st.strangers)
	st.mu.Unlock()

	rows.sort() // outside the lock: 166,667 rows take tens of ms
	slices.SortFunc(w.Exporters, func(a, b sources.FlowExporter) int { return a.Addr.Compare(b.Addr) })
	slices.Sort(strangers)
	if len(strangers) > 0 {
		w.Errors = append(w.Errors, fmt.Sprintf("dropped %d datagrams from addresses not in exporters (first: %v)", w.Drops[dropNames[dropNotExporter]], strangers))
	}
	attrs := []any{"datagrams", w.Datagrams, "flows", w.Flows, "rows", w.NumRows(), "lost_flows", w.LostFlows, "restarts", restarts, "exporters", len(w.Exporters)}
	for k, v := range w.Drops {
		attrs = append(attrs, "drop_"+k, v)
	}
	for _, e := range w.Exporters {
		attrs = append(attrs, "exporter_"+e.Addr.String(), fmt.Sprintf("v%v domains=%d templates=%d datagrams=%d flows=%d lost=%d restarts=%d held=%d sampling=%d",
			e.Versions, e.Domains, e.Templates, e.Datagrams, e.Flows, e.LostFlows, e.Restarts, e.Held, e.Sampling))
	}
	l.opts.Log.Info("flow window", attrs...)
	return w
}

// growRcvBuf raises the socket's receive buffer: SO_RCVBUFFORCE when
// allowed (root, CAP_NET_ADMIN), else SO_RCVBUF within net.core.rmem_max.
// It returns the size the kernel reports (which counts its overhead: twice
// what was granted).
func growRcvBuf(fd, size int) int {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size)
	}
	n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0
	}
	return n
}
