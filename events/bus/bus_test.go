package bus

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRingReachesEverySubscriber(t *testing.T) {
	b := New(zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := b.Subscribe(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	b.Ring(7)
	for name, ch := range map[string]<-chan uint64{"a": a, "c": c} {
		select {
		case got := <-ch:
			if got != 7 {
				t.Errorf("%s got %d", name, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no ring", name)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b.Ring(8) // after close: no panic, no effect
	for range a {
	}
	for range c {
	}
}

func TestSlowSubscriberSeesLatestHead(t *testing.T) {
	b := New(zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Subscribe(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 50; i++ {
		b.Ring(i)
	}
	deadline := time.After(5 * time.Second)
	var last uint64
	for last != 50 {
		select {
		case last = <-ch:
		case <-deadline:
			t.Fatalf("last head seen %d, want 50", last)
		}
	}
	cancel()
	b.Close()
	for range ch {
	}
}

func TestLoggerAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogger(zerolog.New(&buf)).With(map[string]any{"k": "v"})
	l.Error("boom", nil, map[string]any{"x": 1})
	if !strings.Contains(buf.String(), `"k":"v"`) || !strings.Contains(buf.String(), `"message":"boom"`) {
		t.Fatalf("log line %s", buf.String())
	}
}
