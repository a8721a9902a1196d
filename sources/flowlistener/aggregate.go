package flowlistener

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"net/netip"
	"sort"

	"github.com/jocasta/jocasta/sources"
)

// aggKey is one row of a window: both ends, the protocol and the service
// port. Addresses are kept as 16 bytes and a family tag, not netip.Addr:
// the key is 36 bytes instead of 56 and holds no pointer, so a window of
// 166,667 rows (10,000 devices × 1,000 peers an hour) costs about half
// the memory and the collector never scans the table.
type aggKey struct {
	src, dst [16]byte
	proto    uint8
	fam      uint8 // famV4/famV6 of src, shifted left 2 for dst
	port     uint16
}

// Address families in aggKey.fam (zero: no address).
const (
	famV4 = 1
	famV6 = 2
)

func packAddr(a netip.Addr) ([16]byte, uint8) {
	switch {
	case a.Is4():
		return a.As16(), famV4
	case a.IsValid():
		return a.WithZone("").As16(), famV6
	}
	return [16]byte{}, 0
}

func unpackAddr(b [16]byte, fam uint8) netip.Addr {
	switch fam {
	case famV4:
		return netip.AddrFrom16(b).Unmap()
	case famV6:
		return netip.AddrFrom16(b)
	}
	return netip.Addr{}
}

type aggVal struct {
	bytes, packets, flows uint64
}

// table aggregates one window's flows. Its rows are two slices (keys
// and totals: the totals are what every flow writes, so they stay dense
// in the cache), found through an open-addressing index of int32 slots
// (linear probing, at most half full, hashed with a per-table random
// seed so that crafted flows cannot pile up on one slot). A flow of a
// known row costs one hash, a probe or two and no allocation.
//
// The index is why the table is not a Go map: a map[aggKey]int32
// repeats every 36-byte key beside the slices and, at 166,667 rows
// (10,000 devices × 1,000 peers an hour), is about 11 MB live all
// window long, twice that while it grows; the slots are 2 MB.
type table struct {
	slots []int32 // row index + 1; 0 is empty
	seed  maphash.Seed
	rows  windowRows
	max   int
	// hint is the previous window's row count: once a window has an
	// eighth of it, its slices are made that large at once.
	hint int
}

// minSlots is the index's smallest size.
const minSlots = 1024

func newTable(max int) *table {
	return &table{slots: make([]int32, minSlots), seed: maphash.MakeSeed(), max: max}
}

// find returns the slot of k: the one holding its row, or the empty one
// where it goes.
func (t *table) find(k *aggKey) *int32 {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Comparable(t.seed, *k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if *s == 0 || t.rows.keys[*s-1] == *k {
			return s
		}
	}
}

// grow doubles the index and places every row again.
func (t *table) grow() {
	t.slots = make([]int32, 2*len(t.slots))
	for i := range t.rows.keys {
		*t.find(&t.rows.keys[i]) = int32(i + 1)
	}
}

// servicePort picks the port that names the service of a flow: the
// lower of the two (clients use high ephemeral ports), or the one set;
// 0 for protocols without ports.
func servicePort(f *flow) uint16 {
	switch f.proto {
	case 6, 17, 33, 132: // TCP, UDP, DCCP, SCTP
	default:
		return 0
	}
	s, d := f.srcPort, f.dstPort
	switch {
	case s == 0:
		return d
	case d == 0:
		return s
	}
	return min(s, d)
}

// add folds one flow into the table; false when the table is full.
func (t *table) add(f *flow) bool {
	k := aggKey{proto: f.proto, port: servicePort(f)}
	var sf, df uint8
	k.src, sf = packAddr(f.src)
	k.dst, df = packAddr(f.dst)
	k.fam = sf | df<<2
	s := t.find(&k)
	if *s == 0 {
		n := len(t.rows.keys)
		if n >= t.max {
			return false
		}
		if n == cap(t.rows.keys) && t.hint > 0 && n >= t.hint/8 && n < t.hint {
			// Made the last window's size at once, not grown by copying
			// all the way; not at the window's first row, when the last
			// window's rows are still being recorded.
			c := min(t.hint+t.hint/16, t.max)
			t.rows.keys = append(make([]aggKey, 0, c), t.rows.keys...)
			t.rows.vals = append(make([]aggVal, 0, c), t.rows.vals...)
		}
		t.rows.keys = append(t.rows.keys, k)
		t.rows.vals = append(t.rows.vals, aggVal{})
		*s = int32(n + 1)
		if 2*(n+1) > len(t.slots) {
			t.grow()
		}
	}
	r := &t.rows.vals[*s-1]
	r.bytes += f.bytes
	r.packets += f.packets
	r.flows++
	return true
}

// drain hands over the table's rows, unsorted (sort them with sort,
// outside the listener's lock), and empties it. The rows are handed over
// as the table held them, not copied: the next window gets new ones. A
// large index is dropped rather than cleared, so that its memory goes
// while the window just drained is recorded and applied to the traffic
// projection, serve's peak; the next window grows a new one.
func (t *table) drain() *windowRows {
	out := t.rows
	t.hint = len(out.keys)
	if len(t.slots) > keepSlots {
		t.slots = make([]int32, minSlots)
	} else {
		clear(t.slots)
	}
	t.rows = windowRows{}
	return &out
}

// keepSlots is the largest index drain keeps for the next window.
const keepSlots = 1 << 17

// compareKeys orders keys as netip.Addr.Compare orders their addresses
// (no address, then IPv4, then IPv6, each by its bytes), then by
// protocol and port: the order of sources.FlowWindow.Rows.
func compareKeys(a, b *aggKey) int {
	if c := cmp.Compare(a.fam&3, b.fam&3); c != 0 {
		return c
	}
	if c := bytes.Compare(a.src[:], b.src[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.fam>>2, b.fam>>2); c != 0 {
		return c
	}
	if c := bytes.Compare(a.dst[:], b.dst[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.proto, b.proto); c != 0 {
		return c
	}
	return cmp.Compare(a.port, b.port)
}

// windowRows are a table's rows (keys[i] totals vals[i]); drained, the
// window's sources.FlowRows.
type windowRows struct {
	keys []aggKey
	vals []aggVal
}

// Len implements sources.FlowRows and sort.Interface.
func (w *windowRows) Len() int { return len(w.keys) }

// Row implements sources.FlowRows.
func (w *windowRows) Row(i int) sources.FlowRow {
	k, v := &w.keys[i], &w.vals[i]
	return sources.FlowRow{Src: unpackAddr(k.src, k.fam&3), Dst: unpackAddr(k.dst, k.fam>>2), Proto: k.proto, Port: k.port, Bytes: v.bytes, Packets: v.packets, Flows: v.flows}
}

// Less and Swap implement sort.Interface.
func (w *windowRows) Less(i, j int) bool { return compareKeys(&w.keys[i], &w.keys[j]) < 0 }
func (w *windowRows) Swap(i, j int) {
	w.keys[i], w.keys[j] = w.keys[j], w.keys[i]
	w.vals[i], w.vals[j] = w.vals[j], w.vals[i]
}

// sort puts the rows in the order of sources.FlowWindow.Rows.
func (w *windowRows) sort() { sort.Sort(w) }
