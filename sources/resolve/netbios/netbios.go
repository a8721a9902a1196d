package netbios

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

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultTimeout     = time.Second
	DefaultConcurrency = 32
	// Port is the NetBIOS name service port the query goes to.
	Port = 137
)

// Options configure a [Resolver]. The zero value is usable.
type Options struct {
	// Timeout bounds one query: from sending the request to giving up on
	// the host's reply. Zero means DefaultTimeout (1s).
	Timeout time.Duration
	// Concurrency is the most hosts queried at once. Zero means
	// DefaultConcurrency (32).
	Concurrency int
}

// Resolver asks hosts for their NetBIOS node status. It is safe for
// concurrent use.
type Resolver struct {
	timeout     time.Duration
	concurrency int
	port        uint16 // Port; tests point it at a fake responder
}

// New returns a Resolver with o's settings, defaults filled in.
func New(o Options) *Resolver {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return &Resolver{timeout: o.Timeout, concurrency: o.Concurrency, port: Port}
}

// Name returns sources.NameNetBIOS.
func (r *Resolver) Name() string { return sources.NameNetBIOS }

// Enrich asks every IPv4 host that has no name yet for its node status and
// records the computer name as Names["netbios"]. Hosts that do not answer
// stay unnamed; local failures and malformed replies are summarised in the
// returned error. On cancellation it returns ctx.Err() after recording what
// it already has.
func (r *Resolver) Enrich(ctx context.Context, hosts []*sources.Host) error {
	var targets []*sources.Host
	for _, h := range hosts {
		if h != nil && !h.Named() && h.IP.Unmap().Is4() {
			targets = append(targets, h)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	type result struct {
		st  Status
		err error
	}
	results := make([]result, len(targets))
	fanout.Each(ctx, len(targets), r.concurrency, func(i int) {
		st, err := r.Lookup(ctx, targets[i].IP)
		results[i] = result{st, err}
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
			h.SetName(sources.NameNetBIOS, res.st.ComputerName())
		case errors.Is(res.err, ErrNoName), ctxErr != nil:
		default:
			failed++
			if first == nil {
				first = res.err
			}
		}
	}
	var err error
	if failed > 0 {
		err = fmt.Errorf("netbios: %d of %d queries failed, first: %w", failed, len(targets), first)
	}
	if ctxErr != nil {
		err = errors.Join(err, fmt.Errorf("netbios: %w", ctxErr))
	}
	return err
}

// Lookup sends one node status request to ip:137 and returns the parsed
// reply. It waits at most the resolver's timeout and returns ErrNoName
// (wrapped) when nothing valid came back; a malformed reply is returned as
// an error wrapping ErrMalformed if no valid one followed it.
func (r *Resolver) Lookup(ctx context.Context, ip netip.Addr) (Status, error) {
	ip = ip.Unmap()
	if !ip.Is4() {
		return Status{}, fmt.Errorf("netbios: lookup %s: not an IPv4 address", ip)
	}

	conn, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		return Status{}, fmt.Errorf("netbios: lookup %s: open socket: %w", ip, err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(r.timeout)); err != nil {
		return Status{}, fmt.Errorf("netbios: lookup %s: %w", ip, err)
	}
	// A cancelled ctx unblocks the read at once; the read then sees
	// ctx.Err() set.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	id := uint16(rand.Uint32())
	req := AppendRequest(make([]byte, 0, requestLen), id)
	if _, err := conn.WriteToUDPAddrPort(req, netip.AddrPortFrom(ip, r.port)); err != nil {
		return Status{}, fmt.Errorf("netbios: lookup %s: send: %w", ip, err)
	}
	buf := make([]byte, 8192)
	var bad error
	for {
		n, src, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return Status{}, fmt.Errorf("netbios: lookup %s: %w", ip, ctx.Err())
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if bad != nil {
					return Status{}, fmt.Errorf("netbios: lookup %s: %w", ip, bad)
				}
				return Status{}, fmt.Errorf("netbios: lookup %s: %w", ip, ErrNoName)
			}
			return Status{}, fmt.Errorf("netbios: lookup %s: read: %w", ip, err)
		}
		if src.Addr().Unmap() != ip {
			continue // only the asked host may answer
		}
		st, err := ParseNodeStatus(buf[:n])
		if err != nil {
			bad = err
			continue
		}
		if st.ID != id {
			continue
		}
		return st, nil
	}
}
