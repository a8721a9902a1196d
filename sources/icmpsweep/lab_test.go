package icmpsweep

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources/lab"
)

// TestLabSweep sweeps the lab from its scanner namespace, with both socket
// kinds: exactly the hosts that answer ICMP are found (the scanner's own
// address included, the host that drops ICMP not).
func TestLabSweep(t *testing.T) {
	spec := lab.DefaultSpec()
	l := lab.New(t, spec)
	if !l.InScanner(t) {
		return
	}
	want := []netip.Addr{spec.Scanner, spec.DNS}
	for _, h := range spec.Hosts {
		if !h.DropICMP {
			want = append(want, h.IP)
		}
	}
	slices.SortFunc(want, netip.Addr.Compare)
	for _, mode := range []Mode{ModeDatagram, ModeRaw} {
		p, err := Open(Options{Mode: mode})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.Sweep(ctx, []netip.Prefix{spec.Prefix}, Params{Rate: 1000, Rounds: 2, Wait: time.Second})
		cancel()
		p.Close()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		var got []netip.Addr
		for _, r := range res.Responders {
			got = append(got, r.IP)
			if r.RTT <= 0 || r.RTT > 2*time.Second || r.Network != spec.Prefix {
				t.Errorf("%s: responder %+v", mode, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: responders %v, want %v", mode, got, want)
		}
		// 254 addresses in round one, the silent ones again in round two.
		if wantSent := 254 + 254 - len(want); res.ProbesSent != wantSent {
			t.Errorf("%s: ProbesSent %d, want %d", mode, res.ProbesSent, wantSent)
		}
		if len(res.Errors) > 0 || len(res.Warnings) > 0 {
			t.Errorf("%s: errors %q warnings %q", mode, res.Errors, res.Warnings)
		}
		t.Logf("%s: %d responders, %d probes in %v", mode, len(got), res.ProbesSent, res.Finished.Sub(res.Started))
	}
}
