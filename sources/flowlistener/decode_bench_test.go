package flowlistener

import (
	"encoding/binary"
	"net/netip"
	"testing"

	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
)

// benchRecs are n distinct IPv4 (or IPv6) flow records.
func benchRecs(n int, v6 bool) []fg.Rec {
	recs := make([]fg.Rec, n)
	for i := range recs {
		src, dst := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})
		if v6 {
			src = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
			dst = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 15: byte(i)})
		}
		recs[i] = fg.Rec{Src: src, Dst: dst, Proto: 6, SrcPort: uint16(40000 + i), DstPort: 443, Bytes: 1500, Packets: 3}
	}
	return recs
}

// benchDecode decodes first (templates), then data in a loop with its
// sequence number (at seqOff) advanced by step each time, and reports
// flows per datagram. The sink only counts: this measures the decoder,
// BenchmarkTableAdd the table.
func benchDecode(b *testing.B, flowsPer int, seqOff int, step uint32, first, data []byte) {
	b.Helper()
	var n uint64
	d := &decoder{lifetime: DefaultTemplateLifetime, sink: func(*flow) { n++ }}
	ex := &exporter{addr: netip.MustParseAddr("192.0.2.1"), domains: map[uint64]*domain{}}
	if first != nil {
		d.datagram(ex, first, t0)
	}
	seq := binary.BigEndian.Uint32(data[seqOff:])
	for b.Loop() {
		d.datagram(ex, data, t0)
		seq += step
		binary.BigEndian.PutUint32(data[seqOff:], seq)
	}
	b.ReportMetric(float64(flowsPer), "flows/op")
	if n == 0 || d.lost != 0 || ex.restarts != 0 {
		b.Fatalf("%d flows, lost %d, %d restarts", n, d.lost, ex.restarts)
	}
}

func BenchmarkDecodeV5(b *testing.B) {
	benchDecode(b, 30, 16, 30, nil, fg.V5(0, 0, benchRecs(30, false)))
}

func BenchmarkDecodeV9(b *testing.B) {
	tpl := fg.NewV9(0, 1).Template(256, fg.V4).Bytes()
	benchDecode(b, 24, 12, 1, tpl, fg.NewV9(1, 1).Data(256, fg.V4, benchRecs(24, false), 0).Bytes())
}

// BenchmarkDecodeV9Refresh: every packet carries its template (softflowd
// resends every 16 packets; some exporters in every packet).
func BenchmarkDecodeV9Refresh(b *testing.B) {
	benchDecode(b, 24, 12, 1, nil, fg.NewV9(1, 1).Template(256, fg.V4).Data(256, fg.V4, benchRecs(24, false), 0).Bytes())
}

func BenchmarkDecodeIPFIX(b *testing.B) {
	tpl := fg.NewIPFIX(0, 1).Template(300, fg.V6).Bytes()
	benchDecode(b, 20, 8, 20, tpl, fg.NewIPFIX(0, 1).Data(300, fg.V6, benchRecs(20, true), 0).Bytes())
}

// BenchmarkDecodeIPFIXOdd: template in every message, enterprise and
// variable-length fields.
func BenchmarkDecodeIPFIXOdd(b *testing.B) {
	benchDecode(b, 20, 8, 20, nil, fg.NewIPFIX(0, 1).Template(300, fg.Odd).Data(300, fg.Odd, benchRecs(20, false), 0).Bytes())
}
