package flowlistener

import (
	"cmp"
	"fmt"
	"math/rand/v2"
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

// v4Addr and v6Addr are the address i of a test network.
func v4Addr(net byte, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{net, byte(i >> 16), byte(i >> 8), byte(i)})
}

func v6Addr(net byte, i int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 12: net, 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)})
}

// storeCaps are the capacities of the keys and totals of a store.
func storeCaps[K comparable](s *rowStore[K]) [2]int { return [2]int{cap(s.keys), cap(s.vals)} }

// TestTableDrop: a large table's index is dropped at drain (its memory
// goes while the window is applied), a small one's kept; both start
// empty, and the rows handed over are never written again. Rows with
// both ends IPv4 are kept in the v4 store, others in the wide one; the
// store not in use is never made.
func TestTableDrop(t *testing.T) {
	tests := []struct {
		name         string
		addr         func(net byte, i int) netip.Addr
		dst          netip.Addr
		inUse, other func(w *windowRows) [2]int
	}{
		{"v4", v4Addr, netip.MustParseAddr("8.8.8.8"),
			func(w *windowRows) [2]int { return storeCaps(&w.v4) }, func(w *windowRows) [2]int { return storeCaps(&w.wide) }},
		{"v6", v6Addr, netip.MustParseAddr("2001:4860:4860::8888"),
			func(w *windowRows) [2]int { return storeCaps(&w.wide) }, func(w *windowRows) [2]int { return storeCaps(&w.v4) }},
	}
	for _, tc := range tests {
		for _, n := range []int{10, keepSlots/2 + 1} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				tab := newTable(keepSlots)
				for i := range n {
					f := flow{src: tc.addr(10, i), dst: tc.dst, proto: 17, dstPort: 53, bytes: 1, packets: 1}
					tab.add(&f)
				}
				if c := tc.inUse(&tab.rows); c[0] < n || c[1] < n {
					t.Fatalf("the store in use has room for %v of %d rows", c, n)
				}
				if c := tc.other(&tab.rows); c != [2]int{} {
					t.Fatalf("the other store was made: %v", c)
				}
				idx := &tab.slots[0]
				rows := tab.drain()
				if rows.Len() != n {
					t.Fatalf("%d rows, want %d", rows.Len(), n)
				}
				if tab.rows.Len() != 0 || tc.inUse(&tab.rows) != [2]int{} || tc.other(&tab.rows) != [2]int{} || tab.rows.merge != nil ||
					slices.ContainsFunc(tab.slots, func(s int32) bool { return s != 0 }) {
					t.Fatal("not empty after drain, or its rows still the window's")
				}
				if kept := &tab.slots[0] == idx; kept != (n <= keepSlots/4) {
					t.Fatalf("index kept %v", kept)
				}
				// The handed-over rows are the next window's no more, and the
				// next window's slices are made the size of this one's once
				// it has an eighth of its rows (not at its first, while this
				// one's are being recorded).
				f := flow{src: tc.addr(10, 1<<20), dst: tc.dst, proto: 17, dstPort: 53, bytes: 7, packets: 1}
				tab.add(&f)
				if rows.Len() != n || rows.Row(0).Bytes != 1 {
					t.Fatal("the next window's flow changed the drained rows")
				}
				if c := tc.inUse(&tab.rows)[1]; c > max(8, n/8) {
					t.Fatalf("the next window's first row made room for %d", c)
				}
				for i := range n / 4 {
					f := flow{src: tc.addr(11, i), dst: tc.dst, proto: 17, dstPort: 53, bytes: 1, packets: 1}
					tab.add(&f)
				}
				if c := tc.inUse(&tab.rows); n > 100 && (c[0] < n || c[0] > n+n/16 || c[1] != c[0]) {
					t.Fatalf("a quarter into the next window, its rows have room for %v", c)
				}
				if c := tc.other(&tab.rows); c != [2]int{} {
					t.Fatalf("the other store was made in the next window: %v", c)
				}
			})
		}
	}
}

// TestTableIndex: every row is found again through growths of the
// index, a full table refuses new rows but still counts known ones, and
// a flow is added to its own row only; for rows of either store and of
// both.
func TestTableIndex(t *testing.T) {
	const n = 5000
	v4, v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name string
		dst  func(i int) netip.Addr
	}{
		{"v4", func(int) netip.Addr { return v4 }},
		{"wide", func(int) netip.Addr { return v6 }},
		{"both", func(i int) netip.Addr { return []netip.Addr{v4, v6}[i/3%2] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(n)
			for round := range 3 {
				for i := range n {
					f := flow{src: v4Addr(10, i), dst: tc.dst(i), proto: 6, srcPort: 50000, dstPort: 443, bytes: uint64(i), packets: 1}
					if !tab.add(&f) {
						t.Fatalf("round %d: flow %d refused", round, i)
					}
				}
			}
			if len(tab.slots) < 2*n {
				t.Fatalf("%d slots for %d rows: the index did not grow", len(tab.slots), n)
			}
			for _, dst := range []netip.Addr{v4, v6} {
				f := flow{src: v4Addr(10, n), dst: dst, proto: 6, dstPort: 443}
				if tab.add(&f) {
					t.Fatalf("a full table took a new row to %v", dst)
				}
			}
			rows := tab.drain()
			if rows.Len() != n {
				t.Fatalf("%d rows, want %d", rows.Len(), n)
			}
			rows.sort()
			for i := range n {
				r := rows.Row(i)
				if r.Src != v4Addr(10, i) || r.Dst != tc.dst(i) || r.Bytes != uint64(3*i) || r.Packets != 3 || r.Flows != 3 {
					t.Fatalf("row %d: %+v", i, r)
				}
			}
		})
	}
}

// TestTableMaxRows: the row limit counts the rows of both stores: a full
// table refuses a new row of either, however it filled, and still counts
// the known rows of both.
func TestTableMaxRows(t *testing.T) {
	const w, n4 = false, true // the store of a row: wide or v4
	tests := []struct {
		name    string
		fill    []bool
		refused bool
	}{
		{"v4 full, wide refused", []bool{n4, n4, n4, n4}, w},
		{"wide full, v4 refused", []bool{w, w, w, w}, n4},
		{"both, v4 refused", []bool{n4, w, w, n4}, n4},
		{"both, wide refused", []bool{w, n4, n4, w}, w},
	}
	dst := map[bool]netip.Addr{n4: netip.MustParseAddr("192.0.2.1"), w: netip.MustParseAddr("2001:db8::1")}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(len(tc.fill))
			for i, is4 := range tc.fill {
				f := flow{src: v4Addr(10, i), dst: dst[is4], proto: 17, dstPort: 53, bytes: 1, packets: 1}
				if !tab.add(&f) {
					t.Fatalf("row %d refused", i)
				}
			}
			f := flow{src: v4Addr(10, len(tc.fill)), dst: dst[tc.refused], proto: 17, dstPort: 53, bytes: 1, packets: 1}
			if tab.add(&f) {
				t.Fatal("a full table took a new row")
			}
			for i, is4 := range tc.fill {
				f := flow{src: v4Addr(10, i), dst: dst[is4], proto: 17, dstPort: 53, bytes: 1, packets: 1}
				if !tab.add(&f) {
					t.Fatalf("a full table refused the known row %d", i)
				}
			}
			rows := tab.drain()
			rows.sort()
			if rows.Len() != len(tc.fill) {
				t.Fatalf("%d rows, want %d", rows.Len(), len(tc.fill))
			}
			for i, is4 := range tc.fill {
				if r := rows.Row(i); r.Src != v4Addr(10, i) || r.Dst != dst[is4] || r.Flows != 2 {
					t.Fatalf("row %d: %+v", i, r)
				}
			}
		})
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

// compareRows is the order of sources.FlowWindow.Rows, from netip.
func compareRows(a, b sources.FlowRow) int {
	return cmp.Or(a.Src.Compare(b.Src), a.Dst.Compare(b.Dst), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
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
	slices.SortFunc(want, compareRows)
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

// TestTableMixed: a window of rows of both stores (IPv4 both ends, IPv6,
// IPv4 to IPv6 and back, IPv4-mapped IPv6, no address), flows
// interleaved and repeated, comes out sorted row for row as netip sorts
// the rows, each with its totals, whichever order its rows are read in;
// the rows with both ends IPv4, and only they, are in the v4 store.
func TestTableMixed(t *testing.T) {
	listed := []netip.Addr{{}, netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"),
		netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("255.255.255.255"),
		netip.MustParseAddr("::"), netip.MustParseAddr("::1"), netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.2"),
		netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::a"), netip.MustParseAddr("ff02::1")}
	var many []netip.Addr
	for i := range 60 {
		many = append(many, v4Addr(10, i*37%256), v6Addr(1, i%7))
	}
	many = append(many, netip.Addr{}, netip.MustParseAddr("::ffff:10.0.0.5"))
	tests := []struct {
		name  string
		addrs []netip.Addr
		flows int
	}{
		{"listed", listed, 3000},
		{"many", many, 40_000},
	}
	type rowKey struct {
		src, dst netip.Addr
		proto    uint8
		port     uint16
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := newTable(1 << 20)
			ref := map[rowKey]sources.FlowRow{}
			for range tc.flows {
				pp := [][2]uint16{{17, 53}, {6, 443}, {6, 22}, {1, 0}}[rng.IntN(4)]
				f := flow{src: tc.addrs[rng.IntN(len(tc.addrs))], dst: tc.addrs[rng.IntN(len(tc.addrs))], proto: uint8(pp[0]),
					srcPort: 50000, dstPort: pp[1], bytes: rng.Uint64N(1 << 20), packets: rng.Uint64N(100)}
				if !tab.add(&f) {
					t.Fatal("flow refused")
				}
				k := rowKey{f.src, f.dst, f.proto, pp[1]}
				r := ref[k]
				r.Src, r.Dst, r.Proto, r.Port = k.src, k.dst, k.proto, k.port
				r.Bytes += f.bytes
				r.Packets += f.packets
				r.Flows++
				ref[k] = r
			}
			want := make([]sources.FlowRow, 0, len(ref))
			n4 := 0
			for _, r := range ref {
				want = append(want, r)
				if r.Src.Is4() && r.Dst.Is4() {
					n4++
				}
			}
			slices.SortFunc(want, compareRows)
			rows := tab.drain()
			if len(rows.v4.keys) != n4 || rows.Len() != len(want) {
				t.Fatalf("%d rows, %d in the v4 store; want %d, %d", rows.Len(), len(rows.v4.keys), len(want), n4)
			}
			if n4 == 0 || n4 == len(want) || len(want) < 4*64 {
				t.Fatalf("%d rows, %d v4: not a mixed window of several merge words", len(want), n4)
			}
			rows.sort()
			for _, i := range rng.Perm(len(want)) {
				if got := rows.Row(i); got != want[i] {
					t.Fatalf("row %d: %+v, want %+v", i, got, want[i])
				}
			}
		})
	}
}

// TestTableV4Memory: a window of IPv4 rows (10,000 devices × 1,000
// peers an hour: 166,667 rows), sized from the last one, holds at most
// 40 bytes a row besides the index (its 12-byte key and 24 bytes of
// totals, and the sixteenth more the hint makes room for); with aggKey
// rows it would be 64.
func TestTableV4Memory(t *testing.T) {
	const rows = 166_667
	tab := newTable(DefaultMaxRows)
	fill := func() {
		for i := range rows {
			d, p := i%10_000, i/10_000
			f := flow{src: v4Addr(10, d), dst: v4Addr(198, p), proto: 6, srcPort: 40000, dstPort: 443, bytes: 1500, packets: 3}
			tab.add(&f)
		}
	}
	fill()
	tab.drain()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if tab.rows.Len() != rows {
		t.Fatalf("%d rows, want %d", tab.rows.Len(), rows)
	}
	index := 4 * len(tab.slots)
	perRow := (float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(index)) / rows
	t.Logf("%.1f bytes a row and an index of %d bytes", perRow, index)
	if perRow > 40 {
		t.Fatalf("%.1f bytes a row besides the index, want at most 40", perRow)
	}
	runtime.KeepAlive(tab)
}

// BenchmarkTableWindow: windows of 10,000 devices × 1,000 peers an hour
// (166,667 rows) into one table, each drained; reports the heap the
// table holds when a window (not the first) closes (live-MB and
// heap-B/row, after a collection, the index included) and the most it
// held while it grew (peak-MB, sampled each 1,024 rows, garbage not yet
// collected included).
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
	var live, peak uint64
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
		live = ms.HeapAlloc - base
		peak = top
		if tab.drain().Len() != rows {
			b.Fatal("rows lost")
		}
	}
	b.ReportMetric(float64(live)/(1<<20), "live-MB")
	b.ReportMetric(float64(live)/rows, "heap-B/row")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

// BenchmarkTableSort: sorting a drained window of 166,667 rows (10,000
// devices × 1,000 peers an hour, the flows in random order), as the
// listener does outside its lock: all IPv4, or mixed (a tenth of the
// devices IPv6, a seventh of the peers IPv6 to the IPv4 devices).
func BenchmarkTableSort(b *testing.B) {
	const rows = 166_667
	tests := []struct {
		name  string
		mixed bool
	}{
		{"v4", false},
		{"mixed", true},
	}
	for _, tc := range tests {
		b.Run(tc.name, func(b *testing.B) {
			flows := make([]flow, rows)
			for i := range flows {
				d, p := i%10_000, i/10_000
				f := flow{src: v4Addr(10, d), dst: v4Addr(198, p), proto: 6, srcPort: 40000, dstPort: 443, bytes: 1500, packets: 3}
				if tc.mixed && d%10 == 0 {
					f.src, f.dst = v6Addr(10, d), v6Addr(198, p)
				} else if tc.mixed && p%7 == 0 {
					f.dst = v6Addr(198, p)
				}
				flows[i] = f
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(flows), func(i, j int) { flows[i], flows[j] = flows[j], flows[i] })
			tab := newTable(DefaultMaxRows)
			for b.Loop() {
				b.StopTimer()
				for i := range flows {
					tab.add(&flows[i])
				}
				w := tab.drain()
				b.StartTimer()
				w.sort()
			}
		})
	}
}
