package httpapi

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLimiterSet(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newLimiterSet[string](1, 2)
	for i := range 2 {
		if ok, _ := s.take("a", now); !ok {
			t.Fatalf("take %d refused", i)
		}
	}
	ok, wait := s.take("a", now)
	if ok || wait != time.Second {
		t.Fatalf("third take: %v %v", ok, wait)
	}
	if ok, _ := s.take("a", now.Add(time.Second)); !ok {
		t.Fatal("bucket did not refill")
	}
	// Idle full buckets are dropped at the next sweep; busy ones stay.
	s.take("b", now)
	later := now.Add(limiterIdle + 2*time.Minute)
	s.take("c", later)
	if _, ok := s.buckets["a"]; ok {
		t.Fatal("idle bucket a kept")
	}
	if len(s.buckets) != 1 {
		t.Fatalf("%d buckets after sweep, want 1", len(s.buckets))
	}
	inf := newLimiterSet[string](rate.Inf, 0)
	if ok, _ := inf.take("x", now); !ok || len(inf.buckets) != 0 {
		t.Fatal("an infinite limit refused or stored a bucket")
	}
	zero := newLimiterSet[string](1, 0)
	if ok, wait := zero.take("x", now); ok || wait <= 0 {
		t.Fatal("a zero burst passed")
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1": "192.0.2.1", "2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
	} {
		if got := clientKey(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("clientKey(%s) = %s, want %s", in, got, want)
		}
	}
	if retryAfter(1) != 1 || retryAfter(1500*time.Millisecond) != 2 {
		t.Fatal("retryAfter rounds wrong")
	}
}

func TestLimiterSetIsBounded(t *testing.T) {
	s := newLimiterSet[int](1, 1)
	s.max = 64
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Key 0 is used early and often enough to stay: it is spent.
	s.take(0, now)
	for k := 1; k <= 10_000; k++ {
		now = now.Add(time.Millisecond)
		s.take(k, now) // every key spends its only token: none is idle-and-full
		if k%50 == 0 {
			s.take(0, now) // 0 stays recently used
		}
		if n := len(s.buckets); n > s.max {
			t.Fatalf("%d keys after %d distinct clients, cap %d", n, k, s.max)
		}
	}
	if _, ok := s.buckets[10_000]; !ok {
		t.Fatal("the newest key was dropped instead of the oldest")
	}
	if _, ok := s.buckets[1]; ok {
		t.Fatal("the oldest key is still kept")
	}
	if ok, _ := s.take(0, now); ok {
		t.Fatal("a recently used key lost its state (its bucket was dropped)")
	}
}
