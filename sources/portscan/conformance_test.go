package portscan

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.TestPoller(t, sourcetest.Features{
		Kind: "portscan",
		Working: func(t *testing.T) sources.Poller {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			port := uint16(ln.Addr().(*net.TCPAddr).Port)
			return &Poller{
				Known: func(context.Context) ([]sources.KnownAddress, error) {
					return []sources.KnownAddress{{IP: netip.MustParseAddr("127.0.0.1"), Ports: []uint16{port}}}, nil
				},
				Params: Params{Ports: []uint16{port}},
			}
		},
		Failing: func(t *testing.T) sources.Poller {
			return &Poller{Known: func(context.Context) ([]sources.KnownAddress, error) {
				return nil, errors.New("the inventory is not readable")
			}}
		},
		// The scan itself answers its ctx per connection; the part that
		// can wait on something else is the list of known addresses.
		Hanging: func(t *testing.T) sources.Poller {
			return &Poller{Known: func(ctx context.Context) ([]sources.KnownAddress, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}}
		},
	})
}
