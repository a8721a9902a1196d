package sweeprun

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

func TestPacing(t *testing.T) {
	tests := []struct {
		rate, batch, burst int
	}{{1, 1, 1}, {100, 1, 2}, {250, 1, 4}, {1000, 4, 16}, {20000, 64, 256}, {1e9, 64, 256}}
	for _, tt := range tests {
		batch, burst := BurstFor(tt.rate)
		if batch != tt.batch || burst != tt.burst {
			t.Errorf("BurstFor(%d) = %d, %d, want %d, %d", tt.rate, batch, burst, tt.batch, tt.burst)
		}
		if burst > max(tt.rate/50, 1) && burst > batch {
			t.Errorf("rate %d: burst %d is over 2%% of a second's sends", tt.rate, burst)
		}
	}
}

// Back-pressure pauses and sends again; past GiveUp the send is dropped;
// any other error goes back to the caller.
func TestRetry(t *testing.T) {
	p := NewPacer(1000)
	p.Start()
	defer p.Stop()
	p.GiveUp = 3 * time.Millisecond
	var b Backoff
	tries := 0
	for {
		tries++
		again, err := p.Retry(context.Background(), &b, syscall.ENOBUFS)
		if err != nil {
			t.Fatal(err)
		}
		if !again {
			break
		}
	}
	// pauses of 1ms and 2ms, then dropped
	if tries != 3 || p.Retries != 2 || p.Dropped != 1 {
		t.Errorf("tries %d, Retries %d, Dropped %d; want 3, 2, 1", tries, p.Retries, p.Dropped)
	}
	if again, err := p.Retry(context.Background(), &Backoff{}, syscall.EHOSTUNREACH); again || !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Errorf("EHOSTUNREACH: again %v, err %v", again, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if again, err := p.Retry(ctx, &Backoff{}, syscall.EAGAIN); again || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: again %v, err %v", again, err)
	}
}

func TestSendsProblem(t *testing.T) {
	n := Sends{}
	if msg := n.Problem(netip.MustParsePrefix("192.0.2.0/24"), "probes not sent"); msg != "" {
		t.Errorf("no failures: %q", msg)
	}
	n = Sends{Failed: 3, FirstErr: syscall.ENETUNREACH, Abandoned: true}
	want := "network 192.0.2.0/24: 3 probes not sent: network is unreachable (rest of the network skipped)"
	if msg := n.Problem(netip.MustParsePrefix("192.0.2.0/24"), "probes not sent"); msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
}
