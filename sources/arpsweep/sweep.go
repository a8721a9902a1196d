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

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"
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
	var errs []error
	if p.Rate < 1 {
		errs = append(errs, fmt.Errorf("%w: rate %d: want at least 1 request per second", ErrBadParams, p.Rate))
	}
	if p.Rounds < 1 {
		errs = append(errs, fmt.Errorf("%w: rounds %d: want at least 1", ErrBadParams, p.Rounds))
	}
	if p.Wait < 0 {
		errs = append(errs, fmt.Errorf("%w: wait %v: want 0 or more", ErrBadParams, p.Wait))
	}
	return errors.Join(errs...)
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

// Back-pressure and pacing, as in package icmpsweep.
const (
	backoffMin  = time.Millisecond
	backoffMax  = 64 * time.Millisecond
	giveUpAfter = 5 * time.Second
	// maxRoundGap: a round starts at least min(Wait, maxRoundGap) after
	// the previous one, so that a small network's addresses have time to
	// answer before they are asked again.
	maxRoundGap = time.Second
)

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

	lim   *rate.Limiter
	batch int // tokens taken at once
	avail int
	timer *time.Timer
	frame [requestLen]byte

	sent    int
	dropped int
	retries int
	giveUp  time.Duration // giveUpAfter; tests shorten it

	// probed is the number of distinct addresses swept, known once the
	// first round is over (-1 before); answered counts distinct
	// responders. When they meet, allDone closes.
	probed   atomic.Int64
	answered atomic.Int64
	ignored  atomic.Int64
	allDone  chan struct{}
	doneOnce sync.Once

	mu        sync.Mutex
	replies   []Reply
	index     map[netip.Addr]int
	conflicts map[netip.Addr]bool
	warnings  []string
}

func newSweep(ts []*target, p Params) *sweep {
	batch, burst := burstFor(p.Rate)
	s := &sweep{
		params:    p,
		ts:        ts,
		lim:       rate.NewLimiter(rate.Limit(p.Rate), burst),
		batch:     batch,
		allDone:   make(chan struct{}),
		index:     map[netip.Addr]int{},
		conflicts: map[netip.Addr]bool{},
		giveUp:    giveUpAfter,
	}
	for _, t := range ts {
		if !slices.Contains(s.conns, t.conn) {
			s.conns = append(s.conns, t.conn)
		}
	}
	s.probed.Store(-1)
	return s
}

// burstFor returns the pacing steps for a rate (as icmpsweep): the sender
// takes batch tokens at a time (about 4ms of requests, 1 to 64); the
// bucket holds up to burst tokens (up to four batches, at most 2% of a
// second's requests).
func burstFor(r int) (batch, burst int) {
	batch = min(max(r/250, 1), 64)
	burst = max(batch, min(4*batch, r/50))
	return batch, burst
}

func (s *sweep) run(ctx context.Context) (res Result, err error) {
	start := time.Now()
	res.Started = start.UTC()
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()

	for _, c := range s.conns {
		_ = c.setReadDeadline(time.Time{})
		_ = c.setWriteDeadline(time.Time{})
	}
	// Cancelling ctx unblocks a send waiting for buffer space and the
	// readers.
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		for _, c := range s.conns {
			_ = c.setWriteDeadline(time.Now())
			_ = c.setReadDeadline(time.Now())
		}
	})
	readErrs := make(chan error, len(s.conns))
	for _, c := range s.conns {
		go func() { readErrs <- s.read(c) }()
	}

	s.recordLocal()
	sendErr := s.send(ctx)
	if sendErr == nil {
		sendErr = s.waitFor(ctx, s.params.Wait)
	}
	for _, c := range s.conns {
		_ = c.setReadDeadline(time.Now())
	}
	var errs []error
	for range s.conns {
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
	res.RequestsSent = s.sent
	res.Retries = s.retries
	res.Ignored = int(s.ignored.Load())
	s.mu.Lock()
	res.Replies = slices.Clone(s.replies)
	res.Warnings = slices.Clone(s.warnings)
	s.mu.Unlock()
	slices.SortFunc(res.Replies, func(a, b Reply) int { return a.IP.Compare(b.IP) })
	for _, t := range s.ts {
		if t.failed > 0 {
			msg := fmt.Sprintf("network %v: %d ARP requests not sent on %s: %v", t.prefix, t.failed, t.link.Name, t.firstErr)
			if t.abandoned {
				msg += " (rest of the network skipped)"
			}
			res.Errors = append(res.Errors, msg)
		}
	}
	if s.dropped > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%d ARP requests dropped: the kernel refused them (ENOBUFS) for %v each; lower scan.devices.rate",
			s.dropped, giveUpAfter))
	}
	return res, errors.Join(errs...)
}

// recordLocal reports the links' own addresses: nothing answers a host's
// requests for its own address.
func (s *sweep) recordLocal() {
	for _, t := range s.ts {
		for _, a := range t.link.Addrs {
			if off, ok := t.offset(a.Addr()); ok && !t.skip(off) {
				s.record(t, off, a.Addr(), slices.Clone(t.link.MAC), true)
			}
		}
	}
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
		var probed int64
		for _, t := range s.ts {
			for off := uint32(0); off < t.size && !t.abandoned; off++ {
				if t.skip(off) {
					continue
				}
				probed++
				if bit(t.answered, off) {
					continue
				}
				if err := s.take(ctx); err != nil {
					return err
				}
				if err := s.request(ctx, t, off); err != nil {
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
// time, so it is consulted once per batch and nothing is allocated.
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

// request sends one who-has, retrying through back-pressure.
func (s *sweep) request(ctx context.Context, t *target, off uint32) error {
	setBit(t.asked, off) // before sending: the reply may beat the return
	frame := putRequest(s.frame[:], t.srcMAC, t.srcIP, t.addr(off).As4())
	backoff, waited := backoffMin, time.Duration(0)
	for {
		err := t.conn.send(frame)
		switch {
		case err == nil:
			s.sent++
			t.sent++
			return nil
		case errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN):
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
		case linkGone(err):
			s.avail++ // nothing left: the token is not spent
			t.failed++
			if t.firstErr == nil {
				t.firstErr = err
			}
			t.abandoned = true
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

// read receives replies on one link until the read deadline passes.
func (s *sweep) read(c transport) error {
	buf := make([]byte, 1600)
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
		s.handle(c, buf[:n], pt)
	}
}

// handle records a frame that answers one of this sweep's requests and
// counts anything else as ignored. An answer is an ARP reply received on
// the link the request left from, addressed to this host (not looped
// back, not seen in promiscuous mode), from a unicast MAC that is not the
// link's own, for an address of a target that was asked, to the address
// the request came from; a gratuitous reply (sender = target address) is
// an announcement, not an answer.
func (s *sweep) handle(c transport, b []byte, pktType uint8) {
	p, err := parseFrame(b)
	if err != nil || p.Op != opReply || (pktType != unix.PACKET_HOST && pktType != unix.PACKET_BROADCAST) ||
		!unicastMAC(p.SenderMAC) || !unicastMAC(p.EthSrc) || p.SenderIP == p.TargetIP {
		s.ignored.Add(1)
		return
	}
	for _, t := range s.ts { // most specific first
		if t.conn != c {
			continue
		}
		off, ok := t.offset(p.SenderIP)
		if !ok || t.skip(off) {
			continue
		}
		if p.TargetIP != t.src || !bit(t.asked, off) || bytes.Equal(p.SenderMAC, t.srcMAC[:]) {
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
	r := Reply{IP: ip, MAC: mac, Network: t.prefix, Interface: t.link.Name, Local: local}
	s.index[ip] = len(s.replies)
	s.replies = append(s.replies, r)
	s.mu.Unlock()
	if setBit(t.answered, off) {
		s.answered.Add(1)
		s.checkDone()
	}
	if s.params.Found != nil {
		s.params.Found(Reply{IP: ip, MAC: slices.Clone(mac), Network: t.prefix, Interface: t.link.Name, Local: local})
	}
}
