package icmpsweep

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sweeprun"
)

// Params are the pacing of one sweep (scan.devices.rate, rounds, wait).
type Params struct {
	// Rate is the most probes sent per second, over the whole sweep.
	Rate int
	// Rounds is the number of probes to each address that has not
	// answered yet.
	Rounds int
	// Wait is how long replies are awaited after the last probe.
	Wait time.Duration
	// Recheck, when set, is called before each round after the first;
	// the predicate it returns says whether an address that has not
	// answered is worth another probe. A nil predicate or an error means
	// every such address is probed again. The device sweep uses it to
	// spare on-link addresses whose ARP/NDP resolution already failed.
	Recheck func() (func(netip.Addr) bool, error)
}

func (p Params) validate() error {
	return sweeprun.CheckParams(ErrBadParams, "probe", p.Rate, p.Rounds, p.Wait)
}

// Responder is an address that answered an echo request.
type Responder struct {
	IP netip.Addr
	// Network is the most specific swept prefix containing IP.
	Network netip.Prefix
	// RTT is the fastest round trip seen.
	RTT time.Duration
}

// Result is what one sweep found.
type Result struct {
	Started, Finished time.Time
	// Responders, sorted by address.
	Responders []Responder
	// ProbesSent counts echo requests the kernel accepted; probes
	// dropped after back-pressure or refused by the routing table are not
	// counted.
	ProbesSent int
	// Retries counts sends that met back-pressure (ENOBUFS, typically a
	// full neighbour table while ARP/NDP resolves on-link addresses) and
	// were sent again after a pause.
	Retries int
	// Warnings are worth a log line but change nothing (a network's size).
	Warnings []string
	// Errors are problems that made the sweep miss addresses: networks
	// that could not be reached, probes dropped after back-pressure.
	Errors []string
}

// abandonAfter: a network whose first probes all fail (no route) is
// skipped after this many.
const abandonAfter = 256

// Sweep probes every address of every prefix and returns the responders.
//
// Round r probes, in order, every address that has not answered yet, at
// most Rate probes per second (token bucket with a small burst); the next
// round starts after the last and at least min(Wait, 1s) after the start
// of the previous one. After the last probe it waits Wait for replies (less
// when every address has answered). Addresses are computed on the fly:
// per address the sweep keeps one bit ("answered"), and an RTT only for
// responders.
//
// Send errors: EAGAIN/ENOBUFS are back-pressure (the probe is retried);
// "no route"-like errors are recorded once per network in Result.Errors,
// and a network whose first 256 probes all fail is skipped. Sweep returns
// a partial result and ctx.Err() when ctx ends, and a partial result with
// an error on a socket failure. It returns [ErrPrefixTooLarge] before
// sending anything when a prefix has more than 2^24 addresses; networks
// over 2^16 addresses get a warning with the time a sweep takes.
func (p *Pinger) Sweep(ctx context.Context, prefixes []netip.Prefix, params Params) (Result, error) {
	if err := params.validate(); err != nil {
		return Result{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Result{}, ErrClosed
	}
	ts, warnings, err := plan(prefixes, params)
	if err != nil {
		return Result{}, err
	}
	for _, t := range ts {
		if (t.V6() && p.c6 == nil) || (!t.V6() && p.c4 == nil) {
			return Result{}, fmt.Errorf("%w: %v (Open with IPv4/IPv6 set)", ErrNoSocket, t.Prefix)
		}
	}
	s, err := newSweep(ts, params, p.c4, p.c6)
	if err != nil {
		return Result{}, err
	}
	res, err := s.run(ctx)
	res.Warnings = append(warnings, res.Warnings...)
	return res, err
}

type sweep struct {
	params Params
	ts     []*target
	c4, c6 transport
	token  uint64
	start  time.Time
	pace   *sweeprun.Pacer
	seq    uint16
	pkt    [probeLen]byte

	sent     int
	warnings []string

	mu         sync.Mutex
	responders []Responder
	index      map[netip.Addr]int
}

func newSweep(ts []*target, params Params, c4, c6 transport) (*sweep, error) {
	var tok [8]byte
	if _, err := readRandom(tok[:]); err != nil {
		return nil, err
	}
	return &sweep{
		params: params,
		ts:     ts,
		c4:     c4,
		c6:     c6,
		token:  binary.BigEndian.Uint64(tok[:]),
		pace:   sweeprun.NewPacer(params.Rate),
		index:  map[netip.Addr]int{},
	}, nil
}

func readRandom(b []byte) (int, error) {
	n, err := rand.Read(b)
	if err != nil {
		return n, fmt.Errorf("icmpsweep: random: %w", err)
	}
	return n, nil
}

func (s *sweep) transports() []transport {
	var cs []transport
	for _, c := range []transport{s.c4, s.c6} {
		if c != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

func (s *sweep) run(ctx context.Context) (res Result, err error) {
	s.start = time.Now()
	res.Started = s.start.UTC()
	s.pace.Start()
	defer s.pace.Stop()

	err = sweeprun.Exchange(ctx, s.transports(), s.read, func() error {
		if err := s.send(ctx); err != nil {
			return err
		}
		return s.pace.WaitFor(ctx, s.params.Wait)
	})

	res.Finished = time.Now().UTC()
	res.ProbesSent = s.sent
	res.Retries = s.pace.Retries
	res.Warnings = s.warnings
	s.mu.Lock()
	res.Responders = slices.Clone(s.responders)
	s.mu.Unlock()
	slices.SortFunc(res.Responders, func(a, b Responder) int { return a.IP.Compare(b.IP) })
	for _, t := range s.ts {
		if msg := t.Problem(t.Prefix, "probes not sent"); msg != "" {
			res.Errors = append(res.Errors, msg)
		}
	}
	if s.pace.Dropped > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%d probes dropped: the kernel refused them (ENOBUFS) for %v each; lower scan.devices.rate",
			s.pace.Dropped, sweeprun.GiveUpAfter))
	}
	return res, err
}

// send runs the rounds.
func (s *sweep) send(ctx context.Context) error {
	return s.pace.Rounds(ctx, s.params.Rounds, s.params.Wait, func(round int) (int64, error) {
		var again func(netip.Addr) bool
		if round > 0 && s.params.Recheck != nil {
			var err error
			if again, err = s.params.Recheck(); err != nil {
				s.warnings = append(s.warnings, fmt.Sprintf("round %d probes every silent address: %v", round+1, err))
				again = nil
			}
		}
		var probed int64
		for _, t := range s.ts {
			c := s.c4
			if t.V6() {
				c = s.c6
			}
			for off := t.First; off < t.End && !t.Abandoned; off++ {
				if t.Skip(off) {
					continue
				}
				probed++
				if t.answered.Has(off) || again != nil && !again(t.Addr(off)) {
					continue
				}
				if err := s.pace.Take(ctx); err != nil {
					return probed, err
				}
				if err := s.probe(ctx, c, t, off); err != nil {
					return probed, err
				}
			}
		}
		return probed, nil
	})
}

// probe sends one echo request, retrying through back-pressure.
func (s *sweep) probe(ctx context.Context, c transport, t *target, off uint32) error {
	dst := t.Addr(off)
	var bo sweeprun.Backoff
	for {
		pkt := putEcho(s.pkt[:], t.V6(), c.id(), s.seq, s.token, int64(time.Since(s.start)))
		err := c.send(pkt, dst)
		if err == nil {
			s.seq++
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
		case unreachable(err):
			s.pace.Refund() // nothing left: the token is not spent
			t.Failed++
			if t.FirstErr == nil {
				t.FirstErr = fmt.Errorf("sendto %v: %w", dst, err)
			}
			if t.Sent == 0 && t.Failed >= abandonAfter {
				t.Abandoned = true
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return fmt.Errorf("icmpsweep: sendto %v: %w", dst, err)
		}
	}
}

// unreachable: errors that concern the destination, not the socket.
func unreachable(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.EHOSTDOWN,
		syscall.ENETDOWN, syscall.EACCES, syscall.EPERM, syscall.EINVAL, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// read receives replies until the read deadline passes.
func (s *sweep) read(c transport) error {
	buf := make([]byte, 1500)
	v6 := c == s.c6
	for {
		n, from, err := c.recv(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ECONNREFUSED) ||
				errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
				continue
			}
			return fmt.Errorf("icmpsweep: receive: %w", err)
		}
		now := time.Now()
		r, ok := parseReply(buf[:n], v6, c.ipHeader())
		if !ok || r.token != s.token || (c.mode() == ModeRaw && r.id != c.id()) {
			continue
		}
		rtt := now.Sub(s.start) - time.Duration(r.sentNs)
		if rtt <= 0 {
			rtt = time.Nanosecond
		}
		s.record(from, rtt)
	}
}

func (s *sweep) record(from netip.Addr, rtt time.Duration) {
	for _, t := range s.ts {
		off, ok := t.Offset(from)
		if !ok || !t.Walks(off) {
			continue
		}
		s.mu.Lock()
		if i, seen := s.index[from]; seen {
			s.responders[i].RTT = min(s.responders[i].RTT, rtt)
		} else {
			s.index[from] = len(s.responders)
			s.responders = append(s.responders, Responder{IP: from, Network: t.Prefix, RTT: rtt})
		}
		s.mu.Unlock()
		if t.answered.Set(off) {
			s.pace.Answered()
		}
		return
	}
}
