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
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"
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
	var errs []error
	if p.Rate < 1 {
		errs = append(errs, fmt.Errorf("%w: rate %d: want at least 1 probe per second", ErrBadParams, p.Rate))
	}
	if p.Rounds < 1 {
		errs = append(errs, fmt.Errorf("%w: rounds %d: want at least 1", ErrBadParams, p.Rounds))
	}
	if p.Wait < 0 {
		errs = append(errs, fmt.Errorf("%w: wait %v: want 0 or more", ErrBadParams, p.Wait))
	}
	return errors.Join(errs...)
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

// Back-pressure: when sendto fails with ENOBUFS the probe is sent again
// after a pause that doubles from backoffMin to backoffMax; after
// giveUpAfter of pauses for one probe, the probe is dropped and counted.
const (
	backoffMin  = time.Millisecond
	backoffMax  = 64 * time.Millisecond
	giveUpAfter = 5 * time.Second
	// abandonAfter: a network whose first probes all fail (no route) is
	// skipped after this many.
	abandonAfter = 256
	// maxRoundGap: a round starts at least min(Wait, maxRoundGap) after
	// the previous one, so that a small network's addresses have time to
	// answer (and ARP to resolve) before they are probed again.
	maxRoundGap = time.Second
)

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
		if (t.v6 && p.c6 == nil) || (!t.v6 && p.c4 == nil) {
			return Result{}, fmt.Errorf("%w: %v (Open with IPv4/IPv6 set)", ErrNoSocket, t.prefix)
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

	lim   *rate.Limiter
	batch int // tokens taken at once
	avail int
	timer *time.Timer
	seq   uint16
	pkt   [probeLen]byte

	sent     int
	dropped  int
	retries  int
	warnings []string
	giveUp   time.Duration // giveUpAfter; tests shorten it

	// probed is the number of distinct addresses probed, known once the
	// first round is over (-1 before); answered counts distinct
	// responders. When they meet, allDone closes.
	probed   atomic.Int64
	answered atomic.Int64
	allDone  chan struct{}
	doneOnce sync.Once

	mu         sync.Mutex
	responders []Responder
	index      map[netip.Addr]int
}

func newSweep(ts []*target, params Params, c4, c6 transport) (*sweep, error) {
	var tok [8]byte
	if _, err := readRandom(tok[:]); err != nil {
		return nil, err
	}
	batch, burst := burstFor(params.Rate)
	s := &sweep{
		params:  params,
		ts:      ts,
		c4:      c4,
		c6:      c6,
		token:   binary.BigEndian.Uint64(tok[:]),
		lim:     rate.NewLimiter(rate.Limit(params.Rate), burst),
		batch:   batch,
		allDone: make(chan struct{}),
		index:   map[netip.Addr]int{},
		giveUp:  giveUpAfter,
	}
	s.probed.Store(-1)
	return s, nil
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
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()

	cs := s.transports()
	for _, c := range cs {
		_ = c.setReadDeadline(time.Time{})
		_ = c.setWriteDeadline(time.Time{})
	}
	// Cancelling ctx unblocks a send waiting for buffer space and the
	// readers.
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		for _, c := range cs {
			_ = c.setWriteDeadline(time.Now())
			_ = c.setReadDeadline(time.Now())
		}
	})
	readErrs := make(chan error, len(cs))
	for _, c := range cs {
		go func() { readErrs <- s.read(c) }()
	}

	sendErr := s.send(ctx)
	if sendErr == nil {
		sendErr = s.wait(ctx)
	}
	for _, c := range cs {
		_ = c.setReadDeadline(time.Now())
	}
	var errs []error
	for range cs {
		if err := <-readErrs; err != nil {
			errs = append(errs, err)
		}
	}
	if !stop() {
		<-cancelled
	}
	if sendErr != nil {
		errs = append([]error{sendErr}, errs...)
	}
	if ctx.Err() != nil {
		errs = []error{ctx.Err()}
	}

	res.Finished = time.Now().UTC()
	res.ProbesSent = s.sent
	res.Retries = s.retries
	res.Warnings = s.warnings
	s.mu.Lock()
	res.Responders = slices.Clone(s.responders)
	s.mu.Unlock()
	slices.SortFunc(res.Responders, func(a, b Responder) int { return a.IP.Compare(b.IP) })
	for _, t := range s.ts {
		if t.failed > 0 {
			msg := fmt.Sprintf("network %v: %d probes not sent: %v", t.prefix, t.failed, t.firstErr)
			if t.abandoned {
				msg += " (rest of the network skipped)"
			}
			res.Errors = append(res.Errors, msg)
		}
	}
	if s.dropped > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%d probes dropped: the kernel refused them (ENOBUFS) for %v each; lower scan.devices.rate",
			s.dropped, giveUpAfter))
	}
	return res, errors.Join(errs...)
}

// send runs the rounds.
func (s *sweep) send(ctx context.Context) error {
	gap := min(s.params.Wait, maxRoundGap)
	var roundStart time.Time
	for round := range s.params.Rounds {
		if round > 0 {
			if s.finished() {
				return nil
			}
			if d := time.Until(roundStart.Add(gap)); d > 0 {
				if err := s.waitFor(ctx, d); err != nil {
					return err
				}
				if s.finished() {
					return nil
				}
			}
		}
		roundStart = time.Now()
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
			if t.v6 {
				c = s.c6
			}
			for off := t.first; off <= t.last && !t.abandoned; off++ {
				if t.skip(off) {
					continue
				}
				probed++
				if t.isAnswered(off) || again != nil && !again(t.addr(off)) {
					continue
				}
				if err := s.take(ctx); err != nil {
					return err
				}
				if err := s.probe(ctx, c, t, off); err != nil {
					return err
				}
			}
		}
		if round == 0 {
			s.probed.Store(probed)
			s.checkDone()
		}
	}
	return nil
}

// take waits for one token. Tokens come from the limiter a batch at a
// time, so it is consulted once per batch and nothing is allocated. The
// limiter's bucket holds a few batches: what a late timer wake-up costs
// is made up at once instead of being lost to the bucket's cap.
func (s *sweep) take(ctx context.Context) error {
	if s.avail > 0 {
		s.avail--
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		tokens := s.lim.TokensAt(now)
		if n := min(int(tokens), s.lim.Burst()); n >= s.batch && s.lim.AllowN(now, n) {
			s.avail = n - 1
			return nil
		}
		missing := float64(s.batch) - tokens
		d := max(time.Duration(missing/float64(s.lim.Limit())*float64(time.Second)), 20*time.Microsecond)
		if err := s.sleep(ctx, d); err != nil {
			return err
		}
	}
}

func (s *sweep) sleep(ctx context.Context, d time.Duration) error {
	s.timer.Reset(d)
	select {
	case <-ctx.Done():
		s.timer.Stop()
		return ctx.Err()
	case <-s.timer.C:
		return nil
	}
}

// probe sends one echo request, retrying through back-pressure.
func (s *sweep) probe(ctx context.Context, c transport, t *target, off uint32) error {
	dst := t.addr(off)
	backoff, waited := backoffMin, time.Duration(0)
	for {
		pkt := putEcho(s.pkt[:], t.v6, c.id(), s.seq, s.token, int64(time.Since(s.start)))
		err := c.send(pkt, dst)
		switch {
		case err == nil:
			s.seq++
			s.sent++
			t.sent++
			return nil
		case errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN):
			if waited >= s.giveUp {
				s.dropped++
				return nil
			}
			s.retries++
			if err := s.sleep(ctx, backoff); err != nil {
				return err
			}
			waited += backoff
			backoff = min(2*backoff, backoffMax)
		case unreachable(err):
			s.avail++ // nothing left: the token is not spent
			t.failed++
			if t.firstErr == nil {
				t.firstErr = fmt.Errorf("sendto %v: %w", dst, err)
			}
			if t.sent == 0 && t.failed >= abandonAfter {
				t.abandoned = true
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

// wait waits Wait after the last probe, or until every address answered.
func (s *sweep) wait(ctx context.Context) error {
	return s.waitFor(ctx, s.params.Wait)
}

// waitFor waits d, or until every address answered.
func (s *sweep) waitFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	s.timer.Reset(d)
	select {
	case <-ctx.Done():
		s.timer.Stop()
		return ctx.Err()
	case <-s.allDone:
		s.timer.Stop()
		return nil
	case <-s.timer.C:
		return nil
	}
}

func (s *sweep) finished() bool {
	select {
	case <-s.allDone:
		return true
	default:
		return false
	}
}

func (s *sweep) checkDone() {
	if p := s.probed.Load(); p >= 0 && s.answered.Load() >= p {
		s.doneOnce.Do(func() { close(s.allDone) })
	}
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
		off, ok := t.offset(from)
		if !ok || off < t.first || off > t.last {
			continue
		}
		s.mu.Lock()
		if i, seen := s.index[from]; seen {
			s.responders[i].RTT = min(s.responders[i].RTT, rtt)
		} else {
			s.index[from] = len(s.responders)
			s.responders = append(s.responders, Responder{IP: from, Network: t.prefix, RTT: rtt})
		}
		s.mu.Unlock()
		if t.markAnswered(off) {
			s.answered.Add(1)
			s.checkDone()
		}
		return
	}
}
