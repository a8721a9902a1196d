package flowlistener

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
	"github.com/jocasta/jocasta/sources/flowlistener/flowtest"
)

// convs is the capture the exporter tests export: a few hosts talking to
// a few peers, one conversation without answers, two conversations that
// fall into one row (same hosts, protocol and service port).
var convs = []fg.Conv{
	{A: netip.MustParseAddr("10.81.0.10"), B: netip.MustParseAddr("1.1.1.1"), Proto: 6, APort: 40000, BPort: 443, Packets: 12, PayloadAB: 100, PayloadBA: 1200},
	{A: netip.MustParseAddr("10.81.0.10"), B: netip.MustParseAddr("1.1.1.1"), Proto: 6, APort: 40001, BPort: 443, Packets: 3, PayloadAB: 50, PayloadBA: 900},
	{A: netip.MustParseAddr("10.81.0.11"), B: netip.MustParseAddr("8.8.8.8"), Proto: 17, APort: 53000, BPort: 53, Packets: 4, PayloadAB: 40, PayloadBA: 120},
	{A: netip.MustParseAddr("10.81.0.11"), B: netip.MustParseAddr("9.9.9.9"), Proto: 17, APort: 5004, BPort: 5004, Packets: 7, PayloadAB: 300, PayloadBA: -1},
}

// wantRows is what a listener must make of convs: one row per direction
// and service port (the lower port), bytes as IP lengths.
func wantRows(convs []fg.Conv) map[rowKey]sources.FlowRow {
	out := map[rowKey]sources.FlowRow{}
	add := func(src, dst netip.Addr, proto uint8, port uint16, bytes, pkts uint64) {
		if pkts == 0 {
			return
		}
		k := rowKey{src, dst, proto, port}
		r := out[k]
		r.Src, r.Dst, r.Proto, r.Port = src, dst, proto, port
		r.Bytes += bytes
		r.Packets += pkts
		out[k] = r
	}
	for _, c := range convs {
		port := min(c.APort, c.BPort)
		add(c.A, c.B, c.Proto, port, c.BytesAB(), uint64(c.Packets))
		add(c.B, c.A, c.Proto, port, c.BytesBA(), c.PacketsBA())
	}
	return out
}

type rowKey struct {
	src, dst netip.Addr
	proto    uint8
	port     uint16
}

// TestRealExporters exports one capture with softflowd (v5, v9, IPFIX)
// and nfreplay (v9, from nfpcapd's file of the same capture) to the
// listener on loopback, and checks the rows it makes of them: bytes and
// packets per direction exactly as written into the capture.
func TestRealExporters(t *testing.T) {
	flowtest.Require(t, "softflowd", "softflowctl", "nfpcapd", "nfreplay")
	packets := 0
	for _, c := range convs {
		packets += c.Packets
		if c.PayloadBA >= 0 {
			packets += c.Packets
		}
	}
	want := wantRows(convs)
	for _, tc := range []struct {
		name     string
		versions []int
		run      func(ctx context.Context, dir, pcap, host string, port int) error
	}{
		{"softflowd v5", []int{5}, func(ctx context.Context, dir, pcap, host string, port int) error {
			return flowtest.Softflowd(ctx, nil, dir, pcap, fmt.Sprintf("%s:%d", host, port), "5", packets)
		}},
		{"softflowd v9", []int{9}, func(ctx context.Context, dir, pcap, host string, port int) error {
			return flowtest.Softflowd(ctx, nil, dir, pcap, fmt.Sprintf("%s:%d", host, port), "9", packets)
		}},
		{"softflowd IPFIX", []int{10}, func(ctx context.Context, dir, pcap, host string, port int) error {
			return flowtest.Softflowd(ctx, nil, dir, pcap, fmt.Sprintf("%s:%d", host, port), "10", packets)
		}},
		{"nfreplay v9", []int{9}, func(ctx context.Context, dir, pcap, host string, port int) error {
			return flowtest.Nfreplay(ctx, nil, dir, pcap, host, port)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pcap := filepath.Join(dir, "trace.pcap")
			f, err := os.OpenFile(pcap, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := fg.WritePcap(f, time.Now().Add(-time.Minute), convs); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			addr, rec, stop := start(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 100*time.Millisecond)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := tc.run(ctx, dir, pcap, "127.0.0.1", addr.Port); err != nil {
				t.Fatal(err)
			}
			got := map[rowKey]sources.FlowRow{}
			var versions []int
			sum := func() {
				clear(got)
				versions = versions[:0]
				for _, w := range rec.windows() {
					for i := range w.NumRows() {
						r := w.Rows.Row(i)
						k := rowKey{r.Src, r.Dst, r.Proto, r.Port}
						g := got[k]
						g.Src, g.Dst, g.Proto, g.Port = r.Src, r.Dst, r.Proto, r.Port
						g.Bytes += r.Bytes
						g.Packets += r.Packets
						got[k] = g
					}
					for _, e := range w.Exporters {
						for _, v := range e.Versions {
							if !slices.Contains(versions, v) {
								versions = append(versions, v)
							}
						}
					}
					if w.LostFlows != 0 || len(w.Drops) != 0 {
						t.Errorf("window lost %d flows, drops %v", w.LostFlows, w.Drops)
					}
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for sum(); len(got) < len(want) && time.Now().Before(deadline); sum() {
				time.Sleep(100 * time.Millisecond)
			}
			stop()
			sum()
			if len(got) != len(want) {
				t.Errorf("%d rows, want %d", len(got), len(want))
			}
			for k, w := range want {
				if g := got[k]; g != w {
					t.Errorf("row %v -> %v proto %d port %d: got %d bytes %d packets, want %d bytes %d packets",
						k.src, k.dst, k.proto, k.port, g.Bytes, g.Packets, w.Bytes, w.Packets)
				}
			}
			if !slices.Equal(versions, tc.versions) {
				t.Errorf("versions seen %v, want %v", versions, tc.versions)
			}
		})
	}
}
