package sweeptest

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
)

// SendLog is the send side of a fake socket: it counts the attempts per
// destination, lets a test refuse some ([SendLog.SendErr]) and lists the
// sends it accepted. Embed it in a fake.
type SendLog struct {
	// SendErr, when set, decides the error of an attempt (n counts the
	// attempts to dst, from 1). Set it before the sweep starts.
	SendErr func(dst netip.Addr, n int) error

	mu       sync.Mutex
	attempts map[netip.Addr]int
	sent     []netip.Addr // every accepted send, in order
}

// Attempt records an attempt to send to dst and returns the attempt's
// number (from 1) and SendErr's verdict; an attempt without error counts
// as sent.
func (l *SendLog) Attempt(dst netip.Addr) (n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attempts == nil {
		l.attempts = map[netip.Addr]int{}
	}
	l.attempts[dst]++
	n = l.attempts[dst]
	if l.SendErr != nil {
		if err := l.SendErr(dst, n); err != nil {
			return n, err
		}
	}
	l.sent = append(l.sent, dst)
	return n, nil
}

// Sent lists the accepted sends, in order.
func (l *SendLog) Sent() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

// Attempts returns the number of attempts per destination.
func (l *SendLog) Attempts() map[netip.Addr]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.attempts)
}

// ResetAttempts forgets the attempts (not the sends), so that the next
// attempt to each destination is number 1 again.
func (l *SendLog) ResetAttempts() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.attempts)
}
