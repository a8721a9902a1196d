package httpapi

import (
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxBuckets caps the keys one limiterSet tracks. A client with many
// addresses (an IPv6 /48 holds 65,536 /64s) must not grow the map
// without bound; about 200 bytes a key puts the cap at about 13 MB.
const maxBuckets = 65536

// limiterSet keeps one token bucket per key (a client address or a token
// id). Buckets idle for limiterIdle and full again are dropped during a
// sweep that runs at most once a minute on the request path, so the set
// needs no goroutine. At most max keys are kept: a new key past the cap
// first sweeps, then drops the least recently used eighth of the keys
// (their limits start afresh if they come back).
type limiterSet[K comparable] struct {
	limit rate.Limit
	burst int
	max   int

	mu        sync.Mutex
	buckets   map[K]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newLimiterSet[K comparable](limit rate.Limit, burst int) *limiterSet[K] {
	return &limiterSet[K]{limit: limit, burst: burst, max: maxBuckets, buckets: map[K]*bucket{}}
}

func (s *limiterSet[K]) get(key K, now time.Time) *rate.Limiter {
	if now.Sub(s.lastSweep) > time.Minute {
		s.sweep(now)
	}
	b, ok := s.buckets[key]
	if !ok {
		if len(s.buckets) >= s.max {
			s.sweep(now)
		}
		if len(s.buckets) >= s.max {
			s.dropOldest(max(s.max/8, 1))
		}
		b = &bucket{lim: rate.NewLimiter(s.limit, s.burst)}
		s.buckets[key] = b
	}
	b.last = now
	return b.lim
}

// sweep drops the buckets idle for limiterIdle and full again.
func (s *limiterSet[K]) sweep(now time.Time) {
	s.lastSweep = now
	for k, b := range s.buckets {
		if now.Sub(b.last) > limiterIdle && b.lim.TokensAt(now) >= float64(s.burst) {
			delete(s.buckets, k)
		}
	}
}

// dropOldest drops the n least recently used buckets.
func (s *limiterSet[K]) dropOldest(n int) {
	type aged struct {
		key  K
		last time.Time
	}
	all := make([]aged, 0, len(s.buckets))
	for k, b := range s.buckets {
		all = append(all, aged{k, b.last})
	}
	slices.SortFunc(all, func(a, b aged) int { return a.last.Compare(b.last) })
	for _, a := range all[:min(n, len(all))] {
		delete(s.buckets, a.key)
	}
}

// take spends one token. When none is left it spends nothing and says how
// long until one is.
func (s *limiterSet[K]) take(key K, now time.Time) (ok bool, retry time.Duration) {
	if s.limit == rate.Inf {
		return true, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.get(key, now).ReserveN(now, 1)
	if !r.OK() { // burst 0: nothing ever passes
		return false, time.Hour
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// retryAfter turns a wait into whole seconds for Retry-After (at least 1).
func retryAfter(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}

// clientKey is the rate-limit key of a client address: the address for
// IPv4, its /64 for IPv6 (one host usually owns a whole /64).
func clientKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, err := a.Prefix(64)
		if err == nil {
			return p.Addr()
		}
	}
	return a
}
