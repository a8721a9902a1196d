package flowlistener

import (
	"net/netip"
	"testing"
)

// TestTableRoundTrip: rows come out of the table with the addresses,
// families and totals that went in, whatever the family.
func TestTableRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		src, dst netip.Addr
	}{
		{"v4", netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("8.8.8.8")},
		{"v6", netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2606:4700::1111")},
		{"v4 to v6", netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("2001:db8::2")},
		{"v4-mapped v6 stays v6", netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("::1")},
		{"no address", netip.Addr{}, netip.MustParseAddr("8.8.8.8")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(10)
			f := flow{src: tc.src, dst: tc.dst, proto: 6, srcPort: 40000, dstPort: 443, bytes: 100, packets: 2}
			tab.add(&f)
			tab.add(&f)
			rows := tab.drain()
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.Src != tc.src || r.Dst != tc.dst || r.Port != 443 || r.Bytes != 200 || r.Packets != 4 || r.Flows != 2 {
				t.Fatalf("row %+v", r)
			}
		})
	}
}

// TestTableDrop: a large table is dropped at drain (its memory goes
// while the window is applied), a small one kept; both start empty.
func TestTableDrop(t *testing.T) {
	for _, n := range []int{10, keepRows + 1} {
		tab := newTable(keepRows * 2)
		for i := range n {
			f := flow{src: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), dst: netip.MustParseAddr("8.8.8.8"), proto: 17, dstPort: 53, bytes: 1, packets: 1}
			tab.add(&f)
		}
		if rows := tab.drain(); len(rows) != n {
			t.Fatalf("%d rows, want %d", len(rows), n)
		}
		if len(tab.idx) != 0 || len(tab.keys) != 0 || len(tab.rows) != 0 {
			t.Fatalf("%d: not empty after drain", n)
		}
		if kept := cap(tab.keys) > 0; kept != (n <= keepRows) {
			t.Fatalf("%d rows: table kept %v", n, kept)
		}
	}
}

// BenchmarkTableAdd: one flow into a window of 50,000 rows (the bench's
// rate trials: 10,000 devices × 5 peers), the listener's hot path.
func BenchmarkTableAdd(b *testing.B) {
	const rows = 50_000
	flows := make([]flow, rows)
	for i := range flows {
		d, p := i%10_000, i/10_000
		flows[i] = flow{src: netip.AddrFrom4([4]byte{10, byte(d >> 16), byte(d >> 8), byte(d)}), dst: netip.AddrFrom4([4]byte{198, 18, 0, byte(p)}), proto: 6, srcPort: 40000, dstPort: 443, bytes: 1500, packets: 3}
	}
	tab := newTable(rows)
	i := 0
	for b.Loop() {
		tab.add(&flows[i])
		if i++; i == rows {
			i = 0
		}
	}
}
