package arpsweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sweeprun"
	"golang.org/x/sys/unix"
)

// Params are the pacing of one sweep (scan.devices.rate, rounds, wait).
type Params struct {
	// Rate is the most requests sent per second, over the whole sweep.
	Rate int
	// Rounds is the number of requests to each address that has not
	// answered yet.
	Rounds int
	// Wait is how long replies are awaited after the last request.
	Wait time.Duration
	// Found, when set, is called once per new responder (a link's own
	// addresses included) as soon as it is known, from the sweep's
	// goroutines. It must return quickly and must not call the Sweeper.
	Found func(Reply)
}

func (p Params) validate() error {
	return sweeprun.CheckParams(ErrBadParams, "request", p.Rate, p.Rounds, p.Wait)
}

// Reply is an address that answered a request.
type Reply struct {
	IP  netip.Addr
	MAC net.HardwareAddr
	// Network is the most specific swept prefix containing IP.
	Network netip.Prefix
	// Interface is the name of the link it answered on.
	Interface string
	// Local is true for the link's own addresses: the kernel never
	// answers its own requests, so they are reported with the link's MAC
	// and no request is sent.
	Local bool
}

// Result is what one sweep found.
type Result struct {
	Started, Finished time.Time
	// Replies, sorted by address; one per address (the first MAC that
	// answered).
	Replies []Reply
	// RequestsSent counts requests the kernel accepted.
	RequestsSent int
	// Retries counts sends that met back-pressure (ENOBUFS) and were sent
	// again after a pause.
	Retries int
	// Ignored counts received ARP replies that were not answers to this
	// sweep (gratuitous, for addresses not asked, to another address,
	// from an invalid MAC, looped back) or did not parse.
	Ignored int
	// Warnings are worth a log line: an address that answered from two
	// MACs.
	Warnings []string
	// Errors are problems that made the sweep miss addresses: a link
	// that refused requests, requests dropped after back-pressure.
	Errors []string
}

// Sweeper owns one packet socket per link. Sweeps on one Sweeper run one
// at a time; Close ends it.
type Sweeper struct {
	mu     sync.Mutex // held for a whole Sweep
	conns  map[int]transport
	closed bool
}

// Open opens a packet socket (AF_PACKET, bound to ARP) on each link, in
// the calling thread's network namespace. Without CAP_NET_RAW it returns
// an error wrapping [ErrNotPermitted]: that is how a caller learns that
// it must sweep with ICMP instead.
func Open(links []Link) (*Sweeper, error) {
	s := &Sweeper{conns: map[int]transport{}}
	for _, l := range links {
		if _, ok := s.conns[l.Index]; ok {
			continue
		}
		c, err := openConn(l.Index, DefaultBuffer)
		if err != nil {
			_ = s.Close()
			if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
				return nil, fmt.Errorf("%w: open a packet socket on %s: %w", ErrNotPermitted, l.Name, err)
			}
			return nil, fmt.Errorf("arpsweep: open a packet socket on %s: %w", l.Name, err)
		}
		s.conns[l.Index] = c
	}
	return s, nil
}

// Close closes the sockets; a Sweep in progress returns.
func (s *Sweeper) Close() error {
	var errs []error
	for _, c := range s.conns {
		if err := c.close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Sweep asks every address of every target who has it and returns the
// addresses that answered, with their MACs.
//
// Round r sends, in order, a request to every address that has not
// answered yet, at most Rate per second (token bucket with a small
// burst); the next round starts after the last and at least min(Wait,
// 1s) after the start of the previous one. After the last request it
// waits Wait for replies (less when every address has answered).
//
// Sweep returns a partial result and ctx.Err() when ctx ends, and a
// partial result with an error on a socket failure. Bad targets or
// params are refused before anything is sent.
func (s *Sweeper) Sweep(ctx context.Context, targets []Target, p Params) (Result, error) {
	if err := p.validate(); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Result{}, ErrClosed
	}
	ts, err := plan(targets, s.conns)
	if err != nil {
		return Result{}, err
	}
	return newSweep(ts, p).run(ctx)
}

type sweep struct {
	params Params
	ts     []*target
	conns  []transport
	pace   *sweeprun.Pacer
	req    *requestWriter

	sent    int
	ignored atomic.Int64

	mu        sync.Mutex
	replies   []Reply
	index     map[netip.Addr]int
	conflicts map[netip.Addr]bool
	warnings  []string
}

func newSweep(ts []*target, p Params) *sweep {
	s := &sweep{
		params:    p,
		ts:        ts,
		pace:      sweeprun.NewPacer(p.Rate),
		index:     map[netip.Addr]int{},
		conflicts: map[netip.Addr]bool{},
		req:       newRequestWriter(),
	}
	for _, t := range ts {
		if !slices.Contains(s.conns, t.conn) {
			s.conns = append(s.conns, t.conn)
		}
	}
	return s
}

func (s *sweep) run(ctx context.Context) (res Result, err error) {
	res.Started = time.Now().UTC()
	s.pace.Start()
	defer s.pace.Stop()

	err = sweeprun.Exchange(ctx, s.conns, s.read, func() error {
		s.recordLocal()
		if err := s.send(ctx); err != nil {
			return err
		}
		return s.pace.WaitFor(ctx, s.params.Wait)
	})

	res.Finished = time.Now().UTC()
	res.RequestsSent = s.sent
	res.Retries = s.pace.Retries
	res.Ignored = int(s.ignored.Load())
	s.mu.Lock()
	res.Replies = slices.Clone(s.replies)
	res.Warnings = slices.Clone(s.warnings)
	s.mu.Unlock()
	slices.SortFunc(res.Replies, func(a, b Reply) int { return a.IP.Compare(b.IP) })
	for _, t := range s.ts {
		if msg := t.Problem(t.Prefix, "ARP requests not sent on "+t.link.Name); msg != "" {
			res.Errors = append(res.Errors, msg)
		}
	}
	if s.pace.Dropped > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%d ARP requests dropped: the kernel refused them (ENOBUFS) for %v each; lower scan.devices.rate",
			s.pace.Dropped, sweeprun.GiveUpAfter))
	}
	return res, err
}

// recordLocal reports the links' own addresses: nothing answers a host's
// requests for its own address.
func (s *sweep) recordLocal() {
	for _, t := range s.ts {
		for _, a := range t.link.Addrs {
			if off, ok := t.Offset(a.Addr()); ok && t.Owns(off) {
				s.record(t, off, a.Addr(), slices.Clone(t.link.MAC), true)
			}
		}
	}
}

// send runs the rounds.
func (s *sweep) send(ctx context.Context) error {
	return s.pace.Rounds(ctx, s.params.Rounds, s.params.Wait, func(int) (int64, error) {
		var probed int64
		for _, t := range s.ts {
			for off := t.First; off < t.End && !t.Abandoned; off++ {
				if t.Skip(off) {
					continue
				}
				probed++
				if t.answered.Has(off) {
					continue
				}
				if err := s.pace.Take(ctx); err != nil {
					return probed, err
				}
				if err := s.request(ctx, t, off); err != nil {
					return probed, err
				}
			}
		}
		return probed, nil
	})
}

// request sends one who-has, retrying through back-pressure.
func (s *sweep) request(ctx context.Context, t *target, off uint32) error {
	t.asked.Set(off) // before sending: the reply may beat the return
	frame, err := s.req.put(t.srcMAC, t.srcIP, t.Addr(off).As4())
	if err != nil {
		return err
	}
	var bo sweeprun.Backoff
	for {
		err := t.conn.send(frame)
		if err == nil {
			s.sent++
			t.Sent++
			return nil
		}
		again, err := s.pace.Retry(ctx, &bo, err)
		switch {
		case again:
			continue
		case err == nil: // dropped
			return nil
		case linkGone(err):
			s.pace.Refund() // nothing left: the token is not spent
			t.Failed++
			if t.FirstErr == nil {
				t.FirstErr = err
			}
			t.Abandoned = true
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return fmt.Errorf("arpsweep: send on %s: %w", t.link.Name, err)
		}
	}
}

// linkGone: errors that mean the interface cannot send (down, removed).
func linkGone(err error) bool {
	for _, e := range []unix.Errno{unix.ENETDOWN, unix.ENXIO, unix.ENODEV} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// read receives replies on one link until the read deadline passes.
func (s *sweep) read(c transport) error {
	buf := make([]byte, 1600)
	fp := newFrameParser()
	for {
		n, pt, err := c.recv(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			// ENETDOWN: the link went down (sends report it); EINTR.
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENETDOWN) {
				continue
			}
			return fmt.Errorf("arpsweep: receive: %w", err)
		}
		s.handle(fp, c, buf[:n], pt)
	}
}

// handle records a frame that answers one of this sweep's requests and
// counts anything else as ignored. An answer is an ARP reply received on
// the link the request left from, addressed to this host (not looped
// back, not seen in promiscuous mode), from a unicast MAC that is not the
// link's own, for an address of a target that was asked, to the address
// the request came from; a gratuitous reply (sender = target address) is
// an announcement, not an answer.
func (s *sweep) handle(fp *frameParser, c transport, b []byte, pktType uint8) {
	p, err := fp.parse(b)
	if err != nil || p.Op != opReply || (pktType != unix.PACKET_HOST && pktType != unix.PACKET_BROADCAST) ||
		!unicastMAC(p.SenderMAC) || !unicastMAC(p.EthSrc) || p.SenderIP == p.TargetIP {
		s.ignored.Add(1)
		return
	}
	for _, t := range s.ts { // most specific first
		if t.conn != c {
			continue
		}
		off, ok := t.Offset(p.SenderIP)
		if !ok || !t.Owns(off) {
			continue
		}
		if p.TargetIP != t.src || !t.asked.Has(off) || bytes.Equal(p.SenderMAC, t.srcMAC[:]) {
			break
		}
		s.record(t, off, p.SenderIP, p.SenderMAC, false)
		return
	}
	s.ignored.Add(1)
}

// record adds a responder; a second MAC for the same address is a
// warning (an address conflict or proxy ARP), the first MAC stays.
func (s *sweep) record(t *target, off uint32, ip netip.Addr, mac net.HardwareAddr, local bool) {
	s.mu.Lock()
	if i, seen := s.index[ip]; seen {
		if first := s.replies[i].MAC; !bytes.Equal(first, mac) && !s.conflicts[ip] {
			s.conflicts[ip] = true
			s.warnings = append(s.warnings, fmt.Sprintf("%v answered ARP from two MACs, %v and %v (an address conflict or proxy ARP); keeping %v",
				ip, first, mac, first))
		}
		s.mu.Unlock()
		return
	}
	mac = slices.Clone(mac) // it aliases the receive buffer
	r := Reply{IP: ip, MAC: mac, Network: t.Prefix, Interface: t.link.Name, Local: local}
	s.index[ip] = len(s.replies)
	s.replies = append(s.replies, r)
	s.mu.Unlock()
	if t.answered.Set(off) {
		s.pace.Answered()
	}
	if s.params.Found != nil {
		r.MAC = slices.Clone(mac) // the callee may keep it
		s.params.Found(r)
	}
}
