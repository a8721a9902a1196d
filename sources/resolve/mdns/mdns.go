package mdns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/jocasta/jocasta/sources/internal/fanout"
	"github.com/jocasta/jocasta/sources/resolve/onlink"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultTimeout     = time.Second
	DefaultConcurrency = 32
	// Port is the mDNS port.
	Port = 5353
	// maxPacket is the largest mDNS message (RFC 6762 §17).
	maxPacket = 9000
)

// The mDNS groups.
var (
	Group4 = netip.MustParseAddrPort("224.0.0.251:5353")
	Group6 = netip.MustParseAddrPort("[ff02::fb]:5353")
)

// Options configure a [Resolver]. The zero value is usable.
type Options struct {
	// Timeout bounds the wait for one host's answer (both queries are sent
	// at once). Zero means DefaultTimeout (1s).
	Timeout time.Duration
	// Concurrency is the most hosts asked at once. Zero means
	// DefaultConcurrency (32).
	Concurrency int
}

// Resolver asks hosts for their name over mDNS. It is safe for concurrent
// use.
type Resolver struct {
	timeout     time.Duration
	concurrency int
	// Test hooks: where queries go and which sources count as on-link.
	port   uint16
	group4 netip.AddrPort
	group6 netip.AddrPort
	links  func() (onlink.Links, error)
}

// New returns a Resolver with o's settings, defaults filled in.
func New(o Options) *Resolver {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return &Resolver{
		timeout: o.Timeout, concurrency: o.Concurrency,
		port: Port, group4: Group4, group6: Group6, links: onlink.Local,
	}
}

// Name returns sources.NameMDNS.
func (r *Resolver) Name() string { return sources.NameMDNS }

// Enrich asks every host without a reverse DNS name for its mDNS name and
// records it as Names["mdns"]. Silent hosts stay unnamed; local failures and
// malformed replies are summarised in the returned error. On cancellation
// it returns ctx.Err() with what it has.
func (r *Resolver) Enrich(ctx context.Context, hosts []*sources.Host) error {
	var targets []*sources.Host
	for _, h := range hosts {
		if h != nil && h.IP.IsValid() && h.Names[sources.NameDNS] == "" {
			targets = append(targets, h)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	ls, err := r.links()
	if err != nil {
		return err
	}
	type result struct {
		name string
		err  error
	}
	results := make([]result, len(targets))
	fanout.Each(ctx, len(targets), r.concurrency, func(i int) {
		name, err := r.lookup(ctx, ls, targets[i].IP)
		results[i] = result{name, err}
	})

	var (
		failed int
		first  error
	)
	ctxErr := sources.ContextErr(ctx)
	for i, h := range targets {
		res := results[i]
		switch {
		case res.err == nil:
			h.SetName(sources.NameMDNS, res.name)
		case errors.Is(res.err, ErrNoAnswer), errors.Is(res.err, ErrOffLink), ctxErr != nil:
		default:
			failed++
			if first == nil {
				first = res.err
			}
		}
	}
	if failed > 0 {
		err = fmt.Errorf("mdns: %d of %d queries failed, first: %w", failed, len(targets), first)
	}
	if ctxErr != nil {
		err = errors.Join(err, fmt.Errorf("mdns: %w", ctxErr))
	}
	return err
}

// Lookup asks one host for its mDNS name. It returns an error wrapping
// ErrNoAnswer when nothing acceptable came back within the timeout, and
// ErrOffLink for a host outside every local prefix.
func (r *Resolver) Lookup(ctx context.Context, ip netip.Addr) (string, error) {
	ls, err := r.links()
	if err != nil {
		return "", err
	}
	return r.lookup(ctx, ls, ip)
}

func (r *Resolver) lookup(ctx context.Context, ls onlink.Links, ip netip.Addr) (string, error) {
	ip = ip.Unmap()
	ifi, ok := ls.Find(ip)
	if !ok {
		return "", fmt.Errorf("mdns: lookup %s: %w", ip, ErrOffLink)
	}
	qname, err := ReverseName(ip)
	if err != nil {
		return "", fmt.Errorf("mdns: lookup %s: %w", ip, err)
	}

	network, group := "udp4", r.group4
	if ip.Is6() {
		network, group = "udp6", r.group6
		if ip.IsLinkLocalUnicast() && ip.Zone() == "" {
			ip = ip.WithZone(ifi.Name)
		}
		if group.Addr().IsLinkLocalMulticast() {
			group = netip.AddrPortFrom(group.Addr().WithZone(ifi.Name), group.Port())
		}
	}
	conn, err := net.ListenUDP(network, &net.UDPAddr{})
	if err != nil {
		return "", fmt.Errorf("mdns: lookup %s: open socket: %w", ip, err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(r.timeout)); err != nil {
		return "", fmt.Errorf("mdns: lookup %s: %w", ip, err)
	}
	// A cancelled ctx unblocks the read at once; the read then sees
	// ctx.Err() set.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	id := uint16(rand.IntN(0xffff)) + 1
	unicast, err := Query(id, qname, false)
	if err != nil {
		return "", fmt.Errorf("mdns: lookup %s: build query: %w", ip, err)
	}
	qu, err := Query(id, qname, true)
	if err != nil {
		return "", fmt.Errorf("mdns: lookup %s: build query: %w", ip, err)
	}
	_, uerr := conn.WriteToUDPAddrPort(unicast, netip.AddrPortFrom(ip, r.port))
	merr := sendMulticast(conn, ifi, qu, group)
	if uerr != nil && merr != nil {
		return "", fmt.Errorf("mdns: lookup %s: send: %w", ip, errors.Join(uerr, merr))
	}

	buf := make([]byte, maxPacket)
	var bad error
	for {
		n, src, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("mdns: lookup %s: %w", ip, ctx.Err())
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if bad != nil {
					return "", fmt.Errorf("mdns: lookup %s: %w", ip, bad)
				}
				return "", fmt.Errorf("mdns: lookup %s: %w", ip, ErrNoAnswer)
			}
			return "", fmt.Errorf("mdns: lookup %s: read: %w", ip, err)
		}
		if !ls.OnLink(src.Addr()) {
			continue // RFC 6762 §11: off-link replies are ignored
		}
		name, err := ParseReply(buf[:n], qname)
		if err != nil {
			bad = fmt.Errorf("from %s: %w", src.Addr(), err)
			continue
		}
		if name != "" {
			return name, nil
		}
	}
}

// sendMulticast sends b to group out of ifi with IP TTL (hop limit) 255.
// Socket option failures fall back to the routing table.
func sendMulticast(conn *net.UDPConn, ifi net.Interface, b []byte, group netip.AddrPort) error {
	if group.Addr().IsMulticast() {
		if group.Addr().Is4() {
			pc := ipv4.NewPacketConn(conn)
			if ifi.Flags&net.FlagMulticast != 0 {
				_ = pc.SetMulticastInterface(&ifi)
			}
			_ = pc.SetMulticastTTL(255)
		} else {
			pc := ipv6.NewPacketConn(conn)
			if ifi.Flags&net.FlagMulticast != 0 {
				_ = pc.SetMulticastInterface(&ifi)
			}
			_ = pc.SetMulticastHopLimit(255)
		}
	}
	_, err := conn.WriteToUDPAddrPort(b, group)
	return err
}
