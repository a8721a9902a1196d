package dnssd

import (
	"context"
	"errors"
	"fmt"
	"github.com/jocasta/jocasta/sources/resolve/onlink"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultTimeout      = time.Second
	DefaultMaxTypes     = 64
	DefaultMaxInstances = 512
	maxResolveQueries   = 256
	maxPacketsPerRound  = 4096
	maxPacket           = 9000
)

// Group4 is the IPv4 mDNS group.
var Group4 = netip.MustParseAddrPort("224.0.0.251:5353")

// Options configure a [Resolver]. The zero value is usable.
type Options struct {
	// Timeout is how long each round listens for answers after sending
	// its queries. Zero means DefaultTimeout (1s). An Enrich takes two or
	// three rounds.
	Timeout time.Duration
	// MaxTypes caps the service types browsed. Zero means
	// DefaultMaxTypes (64).
	MaxTypes int
	// MaxInstances caps the service instances kept. Zero means
	// DefaultMaxInstances (512).
	MaxInstances int
}

// Resolver browses DNS-SD services. It is safe for concurrent use.
type Resolver struct {
	o Options
	// Test hooks: where queries go and which sources count as on-link.
	group netip.AddrPort
	links func() (onlink.Links, error)
}

// New returns a Resolver with o's settings, defaults filled in.
func New(o Options) *Resolver {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTypes <= 0 {
		o.MaxTypes = DefaultMaxTypes
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = DefaultMaxInstances
	}
	return &Resolver{o: o, group: Group4, links: onlink.Local}
}

// Name returns sources.NameDNSSD.
func (r *Resolver) Name() string { return sources.NameDNSSD }

// Enrich browses the services on the links of hosts, records them on the
// hosts they belong to, and names hosts that are still unnamed after their
// first instance. Malformed replies are summarised in the returned error.
// On cancellation it records what it has and returns ctx.Err().
func (r *Resolver) Enrich(ctx context.Context, hosts []*sources.Host) error {
	byIP := map[netip.Addr]*sources.Host{}
	for _, h := range hosts {
		if h != nil && h.IP.IsValid() {
			byIP[h.IP.Unmap().WithZone("")] = h
		}
	}
	if len(byIP) == 0 {
		return nil
	}
	ls, err := r.links()
	if err != nil {
		return err
	}
	// The interfaces that hold a sweep host, each once.
	var ifaces []net.Interface
	for ip := range byIP {
		if ifi, ok := ls.Find(ip); ok && !slices.ContainsFunc(ifaces, func(i net.Interface) bool { return i.Index == ifi.Index }) {
			ifaces = append(ifaces, ifi)
		}
	}
	if len(ifaces) == 0 {
		return fmt.Errorf("dnssd: %w", ErrNoLink)
	}
	c, err := r.browse(ctx, ls, ifaces)
	r.apply(c, byIP)
	return err
}

// browse runs the query rounds and returns what it heard, with an error
// summarising malformed replies, send failures and cancellation.
func (r *Resolver) browse(ctx context.Context, ls onlink.Links, ifaces []net.Interface) (*cache, error) {
	c := newCache(r.o.MaxTypes, r.o.MaxInstances)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		return c, fmt.Errorf("dnssd: open socket: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	s := &session{r: r, ctx: ctx, conn: conn, ls: ls, ifaces: ifaces, c: c, pc: ipv4.NewPacketConn(conn)}

	s.round([]dns.Question{{Name: ServicesName, Qtype: dns.TypePTR}})
	var qs []dns.Question
	for _, t := range c.typeNames() {
		qs = append(qs, dns.Question{Name: t, Qtype: dns.TypePTR})
	}
	s.round(qs)
	noSRV, noAddr := c.unresolved()
	qs = qs[:0]
	for _, n := range noSRV {
		qs = append(qs, dns.Question{Name: c.instances[n].fqdn, Qtype: dns.TypeSRV})
	}
	for _, n := range noAddr {
		qs = append(qs, dns.Question{Name: n, Qtype: dns.TypeA})
	}
	if len(qs) > maxResolveQueries {
		qs = qs[:maxResolveQueries]
	}
	s.round(qs)

	var errs []error
	if s.malformed > 0 {
		errs = append(errs, fmt.Errorf("dnssd: %d malformed replies ignored, first: %w", s.malformed, s.firstBad))
	}
	if s.sendErr != nil {
		errs = append(errs, fmt.Errorf("dnssd: send query: %w", s.sendErr))
	}
	if s.readErr != nil {
		errs = append(errs, fmt.Errorf("dnssd: read: %w", s.readErr))
	}
	if err := sources.ContextErr(ctx); err != nil {
		errs = append(errs, fmt.Errorf("dnssd: %w", err))
	}
	return c, errors.Join(errs...)
}

// session is the state of one browse.
type session struct {
	r      *Resolver
	ctx    context.Context
	conn   *net.UDPConn
	pc     *ipv4.PacketConn
	ls     onlink.Links
	ifaces []net.Interface
	c      *cache

	malformed int
	firstBad  error
	sendErr   error
	readErr   error
	sends     int
}

// round sends qs out of every interface, then listens for one window.
func (s *session) round(qs []dns.Question) {
	if len(qs) == 0 || s.ctx.Err() != nil || s.readErr != nil {
		return
	}
	// The window; ctx cuts it short through the AfterFunc in browse, so
	// a read ends early only once ctx.Err() is set.
	if err := s.conn.SetReadDeadline(time.Now().Add(s.r.o.Timeout)); err != nil {
		s.readErr = err
		return
	}
	if s.ctx.Err() != nil { // cancelled between AfterFunc and the deadline
		_ = s.conn.SetReadDeadline(time.Unix(1, 0))
	}
	sent := 0
	for _, q := range qs {
		q.Qclass = qclassQU
		m := &dns.Msg{Question: []dns.Question{q}} // id 0: a multicast query
		b, err := m.Pack()
		if err != nil {
			continue // a name from the network that does not pack
		}
		for _, ifi := range s.ifaces {
			if s.r.group.Addr().IsMulticast() && ifi.Flags&net.FlagMulticast != 0 {
				_ = s.pc.SetMulticastInterface(&ifi)
				_ = s.pc.SetMulticastTTL(255)
			}
			if _, err := s.conn.WriteToUDPAddrPort(b, s.r.group); err != nil {
				if s.sendErr == nil {
					s.sendErr = err
				}
				continue
			}
			sent++
		}
	}
	s.sends += sent
	if sent == 0 {
		return
	}
	buf := make([]byte, maxPacket)
	for range maxPacketsPerRound {
		n, src, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.readErr = err
			}
			return
		}
		from := src.Addr().Unmap()
		if !s.ls.OnLink(from) {
			continue
		}
		recs, err := ParseRecords(buf[:n])
		if err != nil {
			s.malformed++
			if s.firstBad == nil {
				s.firstBad = fmt.Errorf("from %s: %w", from, err)
			}
			continue
		}
		s.c.add(from, recs)
	}
	// The packet cap was hit: the rest of this round's replies are ignored.
}

// apply records the services on the hosts and names unnamed hosts.
func (r *Resolver) apply(c *cache, byIP map[netip.Addr]*sources.Host) {
	for ip, svcs := range c.services() {
		h, ok := byIP[ip.WithZone("")]
		if !ok {
			continue
		}
		unnamed := !h.Named()
		for _, s := range svcs {
			if !slices.Contains(h.Services, s) {
				h.Services = append(h.Services, s)
			}
		}
		sortServices(h.Services)
		if unnamed && len(svcs) > 0 {
			h.SetName(sources.NameDNSSD, svcs[0].Instance)
		}
	}
}
