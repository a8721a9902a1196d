package devicesweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/arpsweep"
	"github.com/jocasta/jocasta/sources/icmpsweep"
	"github.com/jocasta/jocasta/sources/neighbour"
)

// Defaults, as in the service contract (scan.devices.*).
const (
	DefaultRate   = 1000
	DefaultRounds = 2
	DefaultWait   = 2 * time.Second
)

// Config configures a [Sweeper].
type Config struct {
	// Networks are the prefixes to sweep (networks). Required; each at
	// most 2^24 addresses.
	Networks []netip.Prefix
	// Rate is the most ICMP probes per second (default 1000).
	Rate int
	// Rounds is the number of probes to each silent address (default 2).
	Rounds int
	// Wait is how long replies are awaited after the last probe (default
	// 2s). Zero means the default; a negative value is an error.
	Wait time.Duration
	// ResolveMACs fills Host.MAC from the neighbour table
	// (scan.devices.resolve_macs). The table is read in any case, to find
	// hosts that answered ARP/NDP but dropped ICMP.
	ResolveMACs bool
	// Enrichers run in order on the hosts of each sweep (reverse DNS,
	// mDNS, NetBIOS, DNS-SD, SSDP).
	Enrichers []sources.Enricher
	// ICMPMode forces the ICMP socket kind; empty tries the unprivileged
	// datagram socket, then a raw socket.
	ICMPMode icmpsweep.Mode
	// DisableARP sweeps on-link IPv4 networks with ICMP as well, as when
	// the process lacks CAP_NET_RAW (for tests and comparisons; there is
	// no setting for it).
	DisableARP bool
	// Log receives warnings (network size, probes that failed) and, at
	// info, progress notes: each network's sweep mode when it changes,
	// and neighbour entries left out of a sweep. nil discards them.
	Log *slog.Logger
}

// warnf logs a warning (see Config.Log).
func (c *Config) warnf(format string, args ...any) { c.Log.Warn(fmt.Sprintf(format, args...)) }

// infof logs a progress note (see Config.Log).
func (c *Config) infof(format string, args ...any) { c.Log.Info(fmt.Sprintf(format, args...)) }

func (c *Config) setDefaults() {
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem at once; it also returns the size
// warnings of the networks.
func (c *Config) Validate() (warnings []string, err error) {
	var errs []error
	if len(c.Networks) == 0 {
		errs = append(errs, fmt.Errorf("%w: networks: empty; list the CIDR prefixes to sweep, e.g. 192.168.1.0/24", ErrConfig))
	}
	for i, e := range c.Enrichers {
		if e == nil {
			errs = append(errs, fmt.Errorf("%w: enricher %d is nil", ErrConfig, i))
		}
	}
	if c.ICMPMode != "" && c.ICMPMode != icmpsweep.ModeDatagram && c.ICMPMode != icmpsweep.ModeRaw {
		errs = append(errs, fmt.Errorf("%w: ICMP mode %q: want %q or %q", ErrConfig, c.ICMPMode, icmpsweep.ModeDatagram, icmpsweep.ModeRaw))
	}
	if len(c.Networks) > 0 {
		w, err := icmpsweep.Check(c.Networks, c.params())
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
		warnings = w
	}
	return warnings, errors.Join(errs...)
}

func (c *Config) params() icmpsweep.Params {
	return icmpsweep.Params{Rate: c.Rate, Rounds: c.Rounds, Wait: c.Wait}
}

// recheck tells the ICMP sweep which silent addresses deserve another
// round. An on-link address is probed again only when its ARP/NDP
// resolution completed (it is there but dropped or lost the echo): for
// the others the kernel already sent its three ARP requests, and another
// probe would only fill the neighbour table again (which, past
// gc_thresh3, is what slows an on-link sweep down). Off-link addresses
// are always probed again.
func (s *Sweeper) recheck() (func(netip.Addr) bool, error) {
	onLink, list := neighbour.OnLink, neighbour.List
	if s.onLink != nil {
		onLink = s.onLink
	}
	if s.neighbours != nil {
		list = s.neighbours
	}
	links, err := onLink()
	if err != nil || len(links) == 0 {
		return nil, err
	}
	entries, err := list()
	if err != nil {
		return nil, err
	}
	resolved := neighbour.Resolved(entries, links)
	return func(a netip.Addr) bool {
		for _, p := range links {
			if p.Contains(a) {
				return resolved[a]
			}
		}
		return true
	}, nil
}

// Sweeper runs device sweeps. Run may be called again after it returns;
// calls must not overlap (use [Scheduler]).
type Sweeper struct {
	cfg          Config
	sizeWarnings []string // logged once, by New
	has4         bool
	has6         bool
	networks     []netip.Prefix

	// modes is the sweep mode of each network at the last sweep (a
	// change is logged).
	modes map[netip.Prefix]string

	// Seams for tests; nil means the real thing.
	icmp       func(ctx context.Context, prefixes []netip.Prefix, p icmpsweep.Params) (icmpsweep.Result, error)
	neighbours func() ([]neighbour.Entry, error)
	onLink     func() ([]netip.Prefix, error)
	localMACs  func() map[netip.Addr]net.HardwareAddr
	links      func() ([]arpsweep.Link, error)
	openARP    func([]arpsweep.Link) (arpSweeper, error)
	openEcho   func() (echoer, error)
}

// New checks cfg (defaults filled in) and logs the networks' size
// warnings. It opens no socket; see [Sweeper.Check].
func New(cfg Config) (*Sweeper, error) {
	cfg.setDefaults()
	warnings, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		cfg.warnf("devicesweep: %s", w)
	}
	s := &Sweeper{cfg: cfg, sizeWarnings: warnings}
	for _, p := range cfg.Networks {
		p = p.Masked()
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if !slices.Contains(s.networks, p) {
			s.networks = append(s.networks, p)
		}
		if p.Addr().Is4() {
			s.has4 = true
		} else {
			s.has6 = true
		}
	}
	return s, nil
}

// Check opens and closes the ICMP sockets a sweep needs: call it at
// startup to fail early with the error wrapping [icmpsweep.ErrNoICMP] that
// names both fixes.
func (s *Sweeper) Check() error {
	p, err := icmpsweep.Open(icmpsweep.Options{IPv4: s.has4, IPv6: s.has6, Mode: s.cfg.ICMPMode})
	if err != nil {
		return err
	}
	return p.Close()
}

// Run performs one sweep: the ARP sweep of the on-link IPv4 networks
// (with CAP_NET_RAW) side by side with the ICMP sweep of the others, then
// the neighbour table, then each enricher in order.
//
// It always returns a Sweep. Complete is true only when the ARP and ICMP
// sweeps ran to the end and ctx was not cancelled; enricher and
// neighbour-table failures are recorded in Errors without making the
// sweep incomplete. The returned error is the fatal one (no ICMP socket,
// socket failure, ctx.Err()).
//
// Every socket is opened on the calling goroutine, so a caller that runs
// Run on a thread switched into a network namespace sweeps that
// namespace.
func (s *Sweeper) Run(ctx context.Context) (*sources.Sweep, error) {
	start := time.Now()
	sw := &sources.Sweep{
		ScanID:   newScanID(),
		Started:  start.UTC(),
		Networks: slices.Clone(s.networks),
	}
	finish := func(err error) (*sources.Sweep, error) {
		sw.Finished = time.Now().UTC()
		sw.Complete = err == nil && ctx.Err() == nil
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		return sw, err
	}

	p := s.plan()
	var (
		ao  arpOutcome
		res icmpsweep.Result
		err error
	)
	if p.arp == nil {
		res, err = s.runICMP(ctx, p.icmp, s.cfg.Rate)
	} else {
		ao, res, err = s.runARP(ctx, p)
		if cerr := p.arp.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("devicesweep: close ARP sockets: %w", cerr)
		}
	}
	for _, w := range res.Warnings {
		if !slices.Contains(s.sizeWarnings, w) {
			s.cfg.warnf("devicesweep: %s", w)
		}
	}
	for _, w := range ao.res.Warnings {
		s.cfg.warnf("devicesweep: %s", w)
	}
	sw.ProbesSent = ao.res.RequestsSent + ao.echoes + res.ProbesSent
	sw.Errors = append(sw.Errors, ao.res.Errors...)
	sw.Errors = append(sw.Errors, res.Errors...)
	sw.Errors = append(sw.Errors, ao.errors...)
	for _, st := range []time.Time{ao.res.Started, res.Started} {
		if !st.IsZero() && (st.Before(sw.Started) || p.arp == nil) {
			sw.Started = st
		}
	}
	if err != nil {
		sw.Errors = append(sw.Errors, err.Error())
	}
	byIP := map[netip.Addr]*sources.Host{}
	arpMACs := map[netip.Addr]net.HardwareAddr{}
	for _, r := range ao.res.Replies {
		h := &sources.Host{IP: r.IP, Network: s.networkOf(r.IP), RTT: ao.rtt[r.IP], Via: sources.ViaARP}
		if s.cfg.ResolveMACs {
			h.MAC = slices.Clone(r.MAC)
		}
		sw.Hosts = append(sw.Hosts, h)
		byIP[r.IP] = h
		arpMACs[r.IP] = r.MAC
	}
	for _, r := range res.Responders {
		if h, ok := byIP[r.IP]; ok { // an ICMP network overlapping an ARP one
			if h.RTT == 0 || r.RTT < h.RTT {
				h.RTT = r.RTT
			}
			continue
		}
		h := &sources.Host{IP: r.IP, Network: r.Network, RTT: r.RTT, Via: sources.ViaICMP}
		sw.Hosts = append(sw.Hosts, h)
		byIP[r.IP] = h
	}
	if err != nil {
		// No neighbour evidence or names for a sweep that did not happen.
		return finish(err)
	}

	if nerr := s.addNeighbours(sw, byIP, arpMACs, p.arpNets, start); nerr != nil {
		sw.Errors = append(sw.Errors, nerr.Error())
	}
	slices.SortFunc(sw.Hosts, func(a, b *sources.Host) int { return a.IP.Compare(b.IP) })

	for _, e := range s.cfg.Enrichers {
		if ctx.Err() != nil {
			break
		}
		if eerr := e.Enrich(ctx, sw.Hosts); eerr != nil && ctx.Err() == nil {
			sw.Errors = append(sw.Errors, fmt.Sprintf("resolver %s: %v", e.Name(), eerr))
		}
	}
	return finish(nil)
}

// runICMP sweeps networks with ICMP at rate probes per second.
func (s *Sweeper) runICMP(ctx context.Context, networks []netip.Prefix, rate int) (icmpsweep.Result, error) {
	params := s.cfg.params()
	params.Rate = rate
	params.Recheck = s.recheck
	if s.icmp != nil {
		return s.icmp(ctx, networks, params)
	}
	var has4, has6 bool
	for _, n := range networks {
		has4 = has4 || n.Addr().Is4()
		has6 = has6 || !n.Addr().Is4()
	}
	p, err := icmpsweep.Open(icmpsweep.Options{IPv4: has4, IPv6: has6, Mode: s.cfg.ICMPMode})
	if err != nil {
		return icmpsweep.Result{}, err
	}
	res, err := p.Sweep(ctx, networks, params)
	if cerr := p.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("devicesweep: close ICMP socket: %w", cerr)
	}
	return res, err
}

// addNeighbours adds the hosts that answered ARP/NDP but not ICMP, and
// fills MACs when ResolveMACs is set (hosts found by the ARP sweep keep
// the MAC they answered from, arpMACs).
//
// A neighbour-only entry whose MAC belongs to a host that answered ICMP or
// the ARP sweep at another address is left out: that device answers, so
// its silence at this address means it left it (the entry is what remains
// of an address change) — or the entry is a proxy-ARP router's, not a
// device.
//
// Inside the ARP-swept networks (arpNets) a neighbour-only entry counts
// only when the kernel confirmed it after the sweep began (start): the
// ARP sweep asked that address and got no answer, and it does not touch
// the table, so an older STALE entry is all that remains of a host that
// left (the ICMP sweep's probes used to push such entries to FAILED).
func (s *Sweeper) addNeighbours(sw *sources.Sweep, byIP map[netip.Addr]*sources.Host, arpMACs map[netip.Addr]net.HardwareAddr,
	arpNets []netip.Prefix, start time.Time) error {
	list := neighbour.List
	if s.neighbours != nil {
		list = s.neighbours
	}
	entries, err := list()
	if err != nil {
		return err
	}
	macs := neighbour.MACs(entries, s.networks)
	local := localMACs
	if s.localMACs != nil {
		local = s.localMACs
	}
	own := local()
	answered := map[string]*sources.Host{}
	for _, h := range sw.Hosts {
		if m, ok := arpMACs[h.IP]; ok {
			answered[m.String()] = h // the reply is fresher than the table
			continue
		}
		m, ok := macs[h.IP]
		if !ok {
			m, ok = own[h.IP] // the sweeping host's own addresses
		}
		if !ok {
			continue
		}
		answered[m.String()] = h
		if s.cfg.ResolveMACs {
			h.MAC = slices.Clone(m)
		}
	}
	since := time.Since(start)
	for _, e := range neighbour.Present(entries, s.networks) {
		if _, ok := byIP[e.IP]; ok {
			continue
		}
		if other, ok := answered[e.MAC.String()]; ok {
			how := "ICMP"
			if other.Via == sources.ViaARP {
				how = "ARP"
			}
			s.cfg.infof("devicesweep: neighbour entry %v (%v, %v) left out: that MAC answered %s at %v", e.IP, e.MAC, e.State, how, other.IP)
			continue
		}
		if slices.ContainsFunc(arpNets, func(p netip.Prefix) bool { return p.Contains(e.IP) }) && e.Confirmed > since {
			s.cfg.infof("devicesweep: neighbour entry %v (%v, %v) left out: it did not answer the ARP sweep and was last confirmed %v ago",
				e.IP, e.MAC, e.State, e.Confirmed.Round(time.Second))
			continue
		}
		h := &sources.Host{IP: e.IP, Network: s.networkOf(e.IP), Via: sources.ViaNeighbour}
		if s.cfg.ResolveMACs {
			h.MAC = slices.Clone(e.MAC)
		}
		sw.Hosts = append(sw.Hosts, h)
		byIP[e.IP] = h
	}
	return nil
}

// networkOf is the most specific swept prefix containing a.
func (s *Sweeper) networkOf(a netip.Addr) netip.Prefix {
	var best netip.Prefix
	for _, p := range s.networks {
		if p.Contains(a) && (!best.IsValid() || p.Bits() > best.Bits()) {
			best = p
		}
	}
	return best
}

// localMACs maps this host's own addresses to the MAC of their interface
// (the neighbour table has no entry for them).
func localMACs() map[netip.Addr]net.HardwareAddr {
	out := map[netip.Addr]net.HardwareAddr{}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifc := range ifs {
		if len(ifc.HardwareAddr) == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out[p.Addr().Unmap()] = ifc.HardwareAddr
			}
		}
	}
	return out
}

// newScanID is 128 random bits as 32 hex characters, like event IDs.
func newScanID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux ≥ 3.17; a time-based ID keeps
		// the sweep going if it ever does.
		return fmt.Sprintf("%032x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// Poll implements sources.Poller: one sweep (Run).
func (s *Sweeper) Poll(ctx context.Context) (sources.Result, error) {
	res, err := s.Run(ctx)
	if res == nil {
		return nil, err
	}
	return res, err
}
