package portscan

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// Defaults.
const (
	// DefaultConcurrency is scan.ports.concurrency's default.
	DefaultConcurrency = 64
	// DefaultTimeout bounds one connection attempt. A LAN host answers a
	// SYN in well under a millisecond; 1s also covers a slow Wi-Fi
	// client, and a host that drops SYNs costs 1s per port per slot.
	DefaultTimeout = time.Second
)

// Target is one address to scan.
type Target struct {
	IP netip.Addr
	// Extra ports the device advertises (DNS-SD), probed besides
	// Params.Ports.
	Extra []uint16
}

// Params configure a [Scan].
type Params struct {
	// Ports probed on every target (see [Ports]).
	Ports []uint16
	// Concurrency is the most connections open at once (default 64).
	Concurrency int
	// Timeout bounds each connection attempt (default 1s).
	Timeout time.Duration
}

type targetState struct {
	ip          netip.Addr
	ports       []uint16
	pending     int
	open        []uint16
	answered    int // connected or refused: the host is there
	unreachable int
	firstUnr    error
	aborted     bool
}

type job struct {
	t    *targetState
	port uint16
}

// Scan connects to every port of every target with a fixed pool of at
// most Concurrency connections in flight (no goroutine per port), each
// bounded by Timeout. A completed connection is an open port (it is reset
// at once: SO_LINGER 0); a refusal (RST) or a timeout is a closed one.
//
// Open lists every target whose probes all completed, with its open
// ports (sorted, possibly empty). A target left out was not (fully)
// probed: ctx ended first, or every probe failed with "no route to host"
// or "network unreachable", which says nothing about its ports; such a
// target is named in Errors. Complete is false when ctx ended or a local
// failure (out of file descriptors, no local port) spoilt probes; Scan
// then also returns an error, and always returns the PortScan.
func Scan(ctx context.Context, targets []Target, p Params) (*sources.PortScan, error) {
	return scan(ctx, targets, p, nil)
}

// dialFunc connects to one port; tests replace the real dialer.
type dialFunc func(ctx context.Context, ap netip.AddrPort) (net.Conn, error)

func scan(ctx context.Context, targets []Target, p Params, dial dialFunc) (*sources.PortScan, error) {
	if p.Concurrency == 0 {
		p.Concurrency = DefaultConcurrency
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	var errs []error
	if p.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("%w: concurrency %d: want at least 1", ErrBadParams, p.Concurrency))
	}
	if p.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: timeout %v: want more than 0", ErrBadParams, p.Timeout))
	}
	for _, port := range p.Ports {
		if port == 0 {
			errs = append(errs, fmt.Errorf("%w: port 0 in the port list", ErrBadParams))
			break
		}
	}
	states := map[netip.Addr]*targetState{}
	var order []*targetState
	for i, t := range targets {
		if !t.IP.IsValid() {
			errs = append(errs, fmt.Errorf("%w: target %d has no address", ErrBadParams, i))
			continue
		}
		ip := t.IP.Unmap()
		st, ok := states[ip]
		if !ok {
			st = &targetState{ip: ip, ports: slices.Clone(p.Ports)}
			states[ip] = st
			order = append(order, st)
		}
		for _, x := range t.Extra {
			if x != 0 {
				st.ports = append(st.ports, x)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, st := range order {
		slices.Sort(st.ports)
		st.ports = slices.Compact(st.ports)
		st.pending = len(st.ports)
	}

	scan := &sources.PortScan{
		ScanID:  newScanID(),
		Started: time.Now().UTC(),
		Ports:   FormatPorts(p.Ports),
		Targets: len(order),
		Open:    map[netip.Addr][]uint16{},
	}
	var (
		mu        sync.Mutex
		probes    int
		localErrs = map[string]int{}
	)
	if dial == nil {
		dialer := &net.Dialer{Timeout: p.Timeout}
		dial = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", ap.String())
		}
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range min(p.Concurrency, max(countJobs(order), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				open, err := probe(ctx, dial, j.t.ip, j.port)
				mu.Lock()
				probes++
				t := j.t
				t.pending--
				switch {
				case open:
					t.open = append(t.open, j.port)
					t.answered++
				case err == nil:
				case ctx.Err() != nil:
					t.aborted = true
				case errors.Is(err, syscall.ECONNREFUSED):
					t.answered++
				case isUnreachable(err):
					t.unreachable++
					if t.firstUnr == nil {
						t.firstUnr = err
					}
				case isTimeout(err):
				default:
					// A local failure: the probe says nothing.
					t.aborted = true
					localErrs[errText(err)]++
				}
				mu.Unlock()
			}
		}()
	}
produce:
	for _, st := range order {
		for _, port := range st.ports {
			select {
			case jobs <- job{st, port}:
			case <-ctx.Done():
				break produce
			}
		}
	}
	close(jobs)
	wg.Wait()

	scan.ProbesSent = probes
	var fatal []error
	for _, st := range order {
		switch {
		case st.aborted || st.pending > 0:
			continue
		case st.answered == 0 && st.unreachable > 0:
			scan.Errors = append(scan.Errors, fmt.Sprintf("%v: unreachable (%v); its ports were not counted", st.ip, errText(st.firstUnr)))
			continue
		}
		slices.Sort(st.open)
		scan.Open[st.ip] = append([]uint16{}, st.open...)
	}
	for _, msg := range sortedKeys(localErrs) {
		scan.Errors = append(scan.Errors, fmt.Sprintf("%d probes failed locally: %s; lower scan.ports.concurrency", localErrs[msg], msg))
		fatal = append(fatal, fmt.Errorf("portscan: %s", msg))
	}
	if err := ctx.Err(); err != nil {
		fatal = append(fatal, err)
	}
	scan.Complete = len(fatal) == 0
	scan.Finished = time.Now().UTC()
	return scan, errors.Join(fatal...)
}

func countJobs(ts []*targetState) int {
	n := 0
	for _, t := range ts {
		n += len(t.ports)
	}
	return n
}

// probe connects once; open reports a completed handshake.
func probe(ctx context.Context, dial dialFunc, ip netip.Addr, port uint16) (open bool, err error) {
	c, err := dial(ctx, netip.AddrPortFrom(ip, port))
	if err != nil {
		return false, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // reset, leave no TIME_WAIT behind
	}
	_ = c.Close()
	return true, nil
}

func isUnreachable(err error) bool {
	return errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, syscall.EHOSTDOWN) || errors.Is(err, syscall.ENETDOWN)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.ETIMEDOUT)
}

// errText is the innermost error's text ("connection refused"), without
// the address that makes each message unique.
func errText(err error) string {
	var se *net.OpError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// newScanID is 128 random bits as 32 hex characters, like event IDs.
func newScanID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%032x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}
