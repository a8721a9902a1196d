package devicesweep

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/icmpsweep"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	cfg := Config{Networks: []netip.Prefix{lan}}
	found := icmpsweep.Result{Responders: []icmpsweep.Responder{{IP: ip("192.0.2.10"), Network: lan, RTT: time.Millisecond}}, ProbesSent: 254}
	sourcetest.TestPoller(t, sourcetest.Features{
		Kind: "sweep",
		Working: func(t *testing.T) sources.Poller {
			return newTest(t, cfg, found, nil, nil, nil)
		},
		Failing: func(t *testing.T) sources.Poller {
			return newTest(t, cfg, icmpsweep.Result{}, errors.New("icmp: cannot open a socket"), nil, nil)
		},
		Hanging: func(t *testing.T) sources.Poller {
			s := newTest(t, cfg, icmpsweep.Result{}, nil, nil, nil)
			s.icmp = func(ctx context.Context, _ []netip.Prefix, _ icmpsweep.Params) (icmpsweep.Result, error) {
				<-ctx.Done() // a sweep that never ends by itself
				return icmpsweep.Result{}, ctx.Err()
			}
			return s
		},
	})
}
