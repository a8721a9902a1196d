package devicesweep

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/jocasta/jocasta/sources/arpsweep"
	"github.com/jocasta/jocasta/sources/icmpsweep"
)

// echoWorkers is the number of ICMP sockets that send echo requests to
// ARP responders, each for one batch at a time: a batch holding a host
// that drops ICMP waits out its rounds, and the others keep going.
const echoWorkers = 4

// echoBuffer is the socket buffer of those sockets: they send a few
// probes, to hosts whose MAC is known.
const echoBuffer = 256 << 10

// arpSweeper is what Run needs from an arpsweep.Sweeper; tests substitute
// a fake.
type arpSweeper interface {
	Sweep(ctx context.Context, targets []arpsweep.Target, p arpsweep.Params) (arpsweep.Result, error)
	Close() error
}

// echoer is what Run needs from an icmpsweep.Pinger to time ARP
// responders; tests substitute a fake.
type echoer interface {
	Sweep(ctx context.Context, prefixes []netip.Prefix, p icmpsweep.Params) (icmpsweep.Result, error)
	Close() error
}

// sweepPlan says how each network of one sweep is swept.
type sweepPlan struct {
	targets []arpsweep.Target // ARP, when arp is set
	arpNets []netip.Prefix    // the targets' prefixes
	icmp    []netip.Prefix    // ICMP, in configuration order
	arp     arpSweeper
	modes   map[netip.Prefix]string
}

// plan picks the mode of each network: ARP for IPv4 networks that lie
// wholly inside the subnet of an up, ARP-using interface, when a packet
// socket opens (CAP_NET_RAW); ICMP for the rest. Sockets are opened here,
// on the calling goroutine, so they belong to its network namespace. A
// mode that changed since the last sweep is logged.
func (s *Sweeper) plan() sweepPlan {
	p := sweepPlan{modes: map[netip.Prefix]string{}}
	var (
		links []arpsweep.Link
		lerr  error
	)
	if !s.cfg.DisableARP && s.has4 {
		links, lerr = s.linksFn()()
	}
	for _, n := range s.networks {
		switch {
		case !n.Addr().Is4():
			p.modes[n] = "ICMP sweep (IPv6: no ARP)"
		case s.cfg.DisableARP:
			p.modes[n] = "ICMP sweep (ARP disabled)"
		case lerr != nil:
			p.modes[n] = fmt.Sprintf("ICMP sweep (ARP: %v)", lerr)
		default:
			if tg, ok := arpsweep.TargetFor(links, n); ok {
				p.targets = append(p.targets, tg)
				p.arpNets = append(p.arpNets, n)
				p.modes[n] = fmt.Sprintf("ARP sweep on %s from %v, ICMP echo to the hosts that answer", tg.Link.Name, tg.Source.Addr())
				continue
			}
			p.modes[n] = "ICMP sweep (not wholly on a local link)"
		}
		p.icmp = append(p.icmp, n)
	}
	if len(p.targets) > 0 {
		var used []arpsweep.Link
		for _, tg := range p.targets {
			if !slices.ContainsFunc(used, func(l arpsweep.Link) bool { return l.Index == tg.Link.Index }) {
				used = append(used, tg.Link)
			}
		}
		a, err := s.openARPFn()(used)
		if err != nil {
			for _, n := range p.arpNets {
				p.modes[n] = fmt.Sprintf("ICMP sweep (%v)", err)
			}
			p.targets, p.arpNets = nil, nil
			p.icmp = slices.Clone(s.networks) // every network, in order
		} else {
			p.arp = a
		}
	}
	for _, n := range s.networks {
		if s.modes[n] != p.modes[n] {
			s.cfg.infof("devicesweep: %v: %s", n, p.modes[n])
		}
	}
	s.modes = p.modes
	return p
}

func (s *Sweeper) linksFn() func() ([]arpsweep.Link, error) {
	if s.links != nil {
		return s.links
	}
	return arpsweep.Links
}

func (s *Sweeper) openARPFn() func([]arpsweep.Link) (arpSweeper, error) {
	if s.openARP != nil {
		return s.openARP
	}
	return func(ls []arpsweep.Link) (arpSweeper, error) { return arpsweep.Open(ls) }
}

func (s *Sweeper) openEchoFn() func() (echoer, error) {
	if s.openEcho != nil {
		return s.openEcho
	}
	return func() (echoer, error) {
		return icmpsweep.Open(icmpsweep.Options{IPv4: true, Mode: s.cfg.ICMPMode, SendBuffer: echoBuffer})
	}
}

// splitRate shares rate between the ARP and the ICMP sweeps that run
// side by side, in proportion to their addresses, so both end their
// rounds together and the sweep as a whole keeps to rate.
func splitRate(rate int, arp, icmp []netip.Prefix) (arpRate, icmpRate int) {
	if len(icmp) == 0 {
		return rate, 0
	}
	if len(arp) == 0 {
		return 0, rate
	}
	a, i := addresses(arp), addresses(icmp)
	arpRate = int(float64(rate)*a/(a+i) + 0.5)
	arpRate = min(max(arpRate, 1), max(rate-1, 1))
	return arpRate, max(rate-arpRate, 1)
}

// addresses is the number of addresses of prefixes (overlaps counted
// twice; an estimate for sharing the rate).
func addresses(ps []netip.Prefix) float64 {
	var n float64
	for _, p := range ps {
		n += float64(uint64(1) << min(p.Addr().BitLen()-p.Bits(), 62))
	}
	return n
}

// arpOutcome is what the ARP side of a sweep found.
type arpOutcome struct {
	res    arpsweep.Result
	rtt    map[netip.Addr]time.Duration
	echoes int      // echo requests sent to ARP responders
	errors []string // of the echo requests
}

// runARP sweeps the plan's ARP targets and, side by side and at a share
// of the rate, its ICMP networks. Every ARP responder is sent ICMP echo
// as soon as it answers (for its RTT), from a few sockets opened here;
// those echoes end with the sweeps. The returned error is the first fatal
// one (a socket failure, ctx.Err()).
func (s *Sweeper) runARP(ctx context.Context, p sweepPlan) (arpOutcome, icmpsweep.Result, error) {
	var out arpOutcome
	arpRate, icmpRate := splitRate(s.cfg.Rate, p.arpNets, p.icmp)

	var echoes []echoer
	for range echoWorkers {
		e, err := s.openEchoFn()()
		if err != nil {
			out.errors = append(out.errors, fmt.Sprintf("echo to ARP responders: %v", err))
			break
		}
		echoes = append(echoes, e)
	}
	defer func() {
		for _, e := range echoes {
			if err := e.Close(); err != nil {
				out.errors = append(out.errors, fmt.Sprintf("echo to ARP responders: close: %v", err))
			}
		}
	}()

	sweepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr := &echoProber{
		params: s.cfg.params(),
		wake:   make(chan struct{}, 1),
		rtt:    map[netip.Addr]time.Duration{},
	}
	echoCtx, stopEcho := context.WithCancel(sweepCtx)
	echoDone := make(chan struct{})
	go func() {
		defer close(echoDone)
		pr.run(echoCtx, echoes)
	}()

	arpDone := make(chan struct{})
	var arpErr error
	go func() {
		defer close(arpDone)
		params := arpsweep.Params{Rate: arpRate, Rounds: s.cfg.Rounds, Wait: s.cfg.Wait}
		if len(echoes) > 0 {
			params.Found = func(r arpsweep.Reply) { pr.add(r.IP) }
		}
		out.res, arpErr = p.arp.Sweep(sweepCtx, p.targets, params)
		if arpErr != nil {
			cancel(arpErr)
		}
	}()

	var (
		res     icmpsweep.Result
		icmpErr error
	)
	if len(p.icmp) > 0 {
		res, icmpErr = s.runICMP(sweepCtx, p.icmp, icmpRate)
		if icmpErr != nil {
			cancel(icmpErr)
		}
	}
	<-arpDone
	stopEcho()
	<-echoDone
	out.rtt, out.echoes = pr.rtt, pr.sent
	out.errors = append(out.errors, pr.errors...)

	var err error
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case arpErr != nil || icmpErr != nil:
		err = context.Cause(sweepCtx)
	}
	return out, res, err
}

// echoProber sends ICMP echo to ARP responders in batches: whatever
// arrived while every socket was busy goes in the next batch.
type echoProber struct {
	params icmpsweep.Params

	mu      sync.Mutex
	pending []netip.Prefix
	wake    chan struct{}

	// Owned by run until it returns.
	rtt    map[netip.Addr]time.Duration
	sent   int
	errors []string
}

// add queues an address; called from the ARP sweep's goroutines.
func (p *echoProber) add(a netip.Addr) {
	p.mu.Lock()
	p.pending = append(p.pending, netip.PrefixFrom(a, a.BitLen()))
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

type echoBatch struct {
	e   echoer
	res icmpsweep.Result
	err error
}

// run starts a batch on a free socket whenever addresses are pending,
// until ctx ends; then it waits for the batches in flight (they end with
// ctx) and returns.
func (p *echoProber) run(ctx context.Context, echoes []echoer) {
	free := slices.Clone(echoes)
	done := make(chan echoBatch)
	running := 0
	for {
		if ctx.Err() == nil && len(free) > 0 {
			p.mu.Lock()
			batch := p.pending
			p.pending = nil
			p.mu.Unlock()
			if len(batch) > 0 {
				e := free[len(free)-1]
				free = free[:len(free)-1]
				running++
				go func() {
					res, err := e.Sweep(ctx, batch, p.params)
					done <- echoBatch{e, res, err}
				}()
			}
		}
		select {
		case <-ctx.Done():
			for ; running > 0; running-- {
				p.merge(<-done)
			}
			return
		case <-p.wake:
		case b := <-done:
			running--
			p.merge(b)
			free = append(free, b.e)
		}
	}
}

func (p *echoProber) merge(b echoBatch) {
	p.sent += b.res.ProbesSent
	for _, r := range b.res.Responders {
		if old, ok := p.rtt[r.IP]; !ok || r.RTT < old {
			p.rtt[r.IP] = r.RTT
		}
	}
	for _, e := range b.res.Errors {
		p.errors = append(p.errors, "echo to ARP responders: "+e)
	}
	// Batches in flight end with the sweep: that is not an error.
	if b.err != nil && !errors.Is(b.err, context.Canceled) && !errors.Is(b.err, context.DeadlineExceeded) {
		p.errors = append(p.errors, fmt.Sprintf("echo to ARP responders: %v", b.err))
	}
}
