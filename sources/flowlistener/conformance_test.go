package flowlistener

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

// The listener conformance suite, on loopback: a listener with a 100 ms
// window fed NetFlow v5 datagrams, and one whose port is already taken.
func TestConformance(t *testing.T) {
	loopback := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	sourcetest.TestListener(t, sourcetest.ListenerFeatures{
		Kind: "flowlistener",
		Working: func(t *testing.T) (sources.Listener, func(context.Context, *testing.T)) {
			l, err := New("conformance", Config{Enabled: true, Listen: "127.0.0.1:0", Exporters: loopback}, Options{Window: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			seq := uint32(0)
			return l, func(ctx context.Context, t *testing.T) {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				a, err := l.Addr(actx)
				if err != nil {
					t.Fatalf("the listener never bound: %v", err)
				}
				send(t, "127.0.0.1", a.(*net.UDPAddr), fg.V5(seq, 0, []fg.Rec{rec(lan, wan, 40000, 443, 1500, 3)}))
				seq++
			}
		},
		Unbindable: func(t *testing.T) sources.Listener {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pc.Close() })
			l, err := New("busy", Config{Enabled: true, Listen: pc.LocalAddr().String(), Exporters: loopback}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	})
}
