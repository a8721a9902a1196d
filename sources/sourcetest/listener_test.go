package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// window is the fake listener's result.
type window struct {
	id                string
	started, finished time.Time
	n                 int
}

func (w *window) Scan() sources.ScanInfo {
	return sources.ScanInfo{ID: w.id, Started: w.started, Finished: w.finished, Complete: true}
}

// chanListener is an in-memory listener: input arrives on in, and each
// window with input is emitted as one result.
type chanListener struct {
	in      chan struct{}
	every   time.Duration
	bindErr error
}

func (l *chanListener) Listen(ctx context.Context, emit func(sources.Result)) error {
	if l.bindErr != nil {
		return fmt.Errorf("fake: listen: %w", l.bindErr)
	}
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	start, n, seq := time.Now(), 0, 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.in:
			n++
		case now := <-tick.C:
			if n == 0 {
				continue
			}
			seq++
			emit(&window{id: fmt.Sprintf("fake@%d", seq), started: start, finished: now, n: n})
			start, n = now, 0
		}
	}
}

// The suite passes a listener that keeps the contract.
func TestListenerSuite(t *testing.T) {
	TestListener(t, ListenerFeatures{
		Kind: "fake",
		Working: func(t *testing.T) (sources.Listener, func(context.Context, *testing.T)) {
			l := &chanListener{in: make(chan struct{}, 10), every: 20 * time.Millisecond}
			return l, func(ctx context.Context, t *testing.T) {
				select {
				case l.in <- struct{}{}:
				case <-ctx.Done():
				}
			}
		},
		Unbindable: func(t *testing.T) sources.Listener {
			return &chanListener{bindErr: errors.New("address already in use")}
		},
	})
}
