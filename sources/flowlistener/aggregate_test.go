package flowlistener

import (
	"cmp"
	"net/netip"
	"runtime"
	"slices"
	"testing"

	"github.com/jocasta/jocasta/sources"
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
			if rows.Len() != 1 {
				t.Fatalf("%d rows", rows.Len())
			}
			r := rows.Row(0)
			if r.Src != tc.src || r.Dst != tc.dst || r.Port != 443 || r.Bytes != 200 || r.Packets != 4 || r.Flows != 2 {
				t.Fatalf("row %+v", r)
			}
		})
	}
}

// TestTableDrop: a large table's index is dropped at drain (its memory
// goes while the window is applied), a small one's kept; both start
// empty, and the rows handed over are never written again.
func TestTableDrop(t *testing.T) {
	for _, n := range []int{10, keepSlots/2 + 1} {
		tab := newTable(keepSlots)
		for i := range n {
			f := flow{src: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), dst: netip.MustParseAddr("8.8.8.8"), proto: 17, dstPort: 53, bytes: 1, packets: 1}
			tab.add(&f)
		}
		idx := &tab.slots[0]
		rows := tab.drain()
		if rows.Len() != n {
			t.Fatalf("%d rows, want %d", rows.Len(), n)
		}
		if tab.rows.Len() != 0 || cap(tab.rows.keys) != 0 || cap(tab.rows.vals) != 0 || slices.ContainsFunc(tab.slots, func(s int32) bool { return s != 0 }) {
			t.Fatalf("%d: not empty after drain, or its rows still the window's", n)
		}
		if kept := &tab.slots[0] == idx; kept != (n <= keepSlots/4) {
			t.Fatalf("%d rows: index kept %v", n, kept)
		}
		// The handed-over rows are the next window's no more, and the next
		// window's slices are made the size of this one's once it has an
		// eighth of its rows (not at its first, while this one's are
		// being recorded).
		f := flow{src: netip.MustParseAddr("10.9.9.9"), dst: netip.MustParseAddr("8.8.8.8"), proto: 17, dstPort: 53, bytes: 7, packets: 1}
		tab.add(&f)
		if rows.Len() != n || rows.Row(0).Bytes != 1 {
			t.Fatalf("%d: the next window's flow changed the drained rows", n)
		}
		if c := cap(tab.rows.vals); c > max(8, n/8) {
			t.Fatalf("%d: the next window's first row made room for %d", n, c)
		}
		for i := range n / 4 {
			f := flow{src: netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}), dst: netip.MustParseAddr("8.8.8.8"), proto: 17, dstPort: 53, bytes: 1, packets: 1}
			tab.add(&f)
		}
		if c := cap(tab.rows.vals); n > 100 && (c < n || c > n+n/16) {
			t.Fatalf("%d: a quarter into the next window, its rows have room for %d", n, c)
		}
	}
}

// TestTableIndex: every row is found again through growths of the
// index, a full table refuses new rows but still counts known ones, and
// a flow is added to its own row only.
func TestTableIndex(t *testing.T) {
	const n = 5000
	tab := newTable(n)
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }
	for round := range 3 {
		for i := range n {
			f := flow{src: addr(i), dst: netip.MustParseAddr("2001:db8::1"), proto: 6, srcPort: 50000, dstPort: 443, bytes: uint64(i), packets: 1}
			if !tab.add(&f) {
				t.Fatalf("round %d: flow %d refused", round, i)
			}
		}
	}
	if len(tab.slots) < 2*n {
		t.Fatalf("%d slots for %d rows: the index did not grow", len(tab.slots), n)
	}
	f := flow{src: addr(n), dst: netip.MustParseAddr("2001:db8::1"), proto: 6, dstPort: 443}
	if tab.add(&f) {
		t.Fatal("a full table took a new row")
	}
	rows := tab.drain()
	if rows.Len() != n {
		t.Fatalf("%d rows, want %d", rows.Len(), n)
	}
	rows.sort()
	for i := range n {
		r := rows.Row(i)
		if r.Src != addr(i) || r.Bytes != uint64(3*i) || r.Packets != 3 || r.Flows != 3 {
			t.Fatalf("row %d: %+v", i, r)
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

// TestTableOrder: drained rows come out sorted as netip.Addr.Compare
// sorts their addresses (no address, IPv4, IPv6), then by protocol and
// port.
func TestTableOrder(t *testing.T) {
	addrs := []netip.Addr{{}, netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("192.0.2.1"),
		netip.MustParseAddr("::1"), netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("2001:db8::1")}
	tab := newTable(1000)
	var want []sources.FlowRow
	for i := len(addrs) - 1; i >= 0; i-- {
		for j := len(addrs) - 1; j >= 0; j-- {
			for _, pp := range [][2]uint16{{17, 53}, {6, 443}, {6, 22}} {
				f := flow{src: addrs[i], dst: addrs[j], proto: uint8(pp[0]), srcPort: 50000, dstPort: pp[1], bytes: 1, packets: 1}
				tab.add(&f)
				want = append(want, sources.FlowRow{Src: addrs[i], Dst: addrs[j], Proto: uint8(pp[0]), Port: pp[1], Bytes: 1, Packets: 1, Flows: 1})
			}
		}
	}
	slices.SortFunc(want, func(a, b sources.FlowRow) int {
		return cmp.Or(a.Src.Compare(b.Src), a.Dst.Compare(b.Dst), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
	})
	rows := tab.drain()
	rows.sort()
	if rows.Len() != len(want) {
		t.Fatalf("%d rows, want %d", rows.Len(), len(want))
	}
	for i := range want {
		if got := rows.Row(i); got != want[i] {
			t.Fatalf("row %d: %+v, want %+v", i, got, want[i])
		}
	}
}

// BenchmarkTableWindow: windows of 10,000 devices × 1,000 peers an hour
// (166,667 rows) into one table, each drained; reports the heap the
// table holds when a window (not the first) closes (live-MB, after a
// collection) and the most it held while it grew (peak-MB, sampled
// each 1,024 rows, garbage not yet collected included).
func BenchmarkTableWindow(b *testing.B) {
	const rows = 166_667
	tab := newTable(DefaultMaxRows)
	fill := func(each func(i int)) {
		for i := range rows {
			d, p := i%10_000, i/10_000
			f := flow{src: netip.AddrFrom4([4]byte{10, byte(d >> 16), byte(d >> 8), byte(d)}), dst: netip.AddrFrom4([4]byte{198, 18, byte(p >> 8), byte(p)}), proto: 6, srcPort: 40000, dstPort: 443, bytes: 1500, packets: 3}
			tab.add(&f)
			each(i)
		}
	}
	fill(func(int) {})
	tab.drain()
	var live, peak float64
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		top := uint64(0)
		fill(func(i int) {
			if i%1024 == 0 {
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapAlloc-base)
			}
		})
		runtime.GC()
		runtime.ReadMemStats(&ms)
		live = float64(ms.HeapAlloc-base) / (1 << 20)
		peak = float64(top) / (1 << 20)
		if tab.drain().Len() != rows {
			b.Fatal("rows lost")
		}
	}
	b.ReportMetric(live, "live-MB")
	b.ReportMetric(peak, "peak-MB")
}
