package flowlistener

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"net/netip"
	"sort"

	"github.com/jocasta/jocasta/sources"
)

// aggKey is one row of a window: both ends, the protocol and the service
// port. Addresses are kept as 16 bytes and a family tag, not netip.Addr:
// the key is 36 bytes instead of 56 and holds no pointer, so a window of
// 166,667 rows (10,000 devices × 1,000 peers an hour) costs about half
// the memory and the collector never scans the table. Rows whose ends
// are both IPv4 (nearly all) are keyed by a key4 instead.
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

// key4 is the key of a row whose ends are both IPv4: 12 bytes instead of
// aggKey's 36, so such a row with its totals is 36 bytes instead of 60,
// and fewer bytes to hash and compare make a flow and the sort cheaper
// too (BenchmarkTableAdd: 46 ns a flow instead of 78; BenchmarkTableSort
// of 166,667 rows: 29 ms instead of 41). pad is always zero: with it the
// key has no hidden padding and is hashed and compared as 12 plain
// bytes.
type key4 struct {
	src, dst [4]byte
	proto    uint8
	//lint:ignore U1000 never set: it is there to be zero (see above)
	pad  uint8
	port uint16
}

// order is the key as two integers that sort as compareKeys sorts it.
func (k *key4) order() (uint64, uint32) {
	return uint64(binary.BigEndian.Uint32(k.src[:]))<<32 | uint64(binary.BigEndian.Uint32(k.dst[:])), uint32(k.proto)<<16 | uint32(k.port)
}

// before says whether k comes before the wide key w in compareKeys'
// order.
func (k *key4) before(w *aggKey) bool {
	a := aggKey{src: netip.AddrFrom4(k.src).As16(), dst: netip.AddrFrom4(k.dst).As16(), proto: k.proto, fam: famV4 | famV4<<2, port: k.port}
	return compareKeys(&a, w) < 0
}

type aggVal struct {
	bytes, packets, flows uint64
}

// table aggregates one window's flows. Its rows are in two stores, each
// two slices (keys and totals: the totals are what every flow writes, so
// they stay dense in the cache): rows with both ends IPv4 keyed by a
// key4, all others (IPv6, mixed families, no address) by an aggKey. At
// 166,667 IPv4 rows (10,000 devices × 1,000 peers an hour) a window's
// rows are 6.4 MB instead of 10.6 (BenchmarkTableWindow: 50.9 heap
// bytes a row instead of 76.4, the index included, and 9.1 MiB at most
// while the window fills instead of 15.3). Both stores are found
// through one open-addressing index of int32 slots (linear probing, at
// most half full, hashed with a per-table random seed so that crafted
// flows cannot pile up on one slot). A flow of a known row costs one
// hash, a probe or two and no allocation.
//
// The index is why the table is not a Go map: a map[aggKey]int32
// repeats every 36-byte key beside the slices and, at 166,667 rows, is
// about 11 MB live all window long, twice that while it grows; the slots
// are 2 MB.
type table struct {
	// slots hold a v4 row's index + 1, or minus a wide row's index + 1;
	// 0 is empty.
	slots []int32
	seed  maphash.Seed
	rows  windowRows
	max   int // rows of both stores
	// hint4 and hintWide are the previous window's row counts in each
	// store: once a window has an eighth of one, that store's slices are
	// made that large at once.
	hint4, hintWide int
}

// minSlots is the index's smallest size.
const minSlots = 1024

func newTable(max int) *table {
	return &table{slots: make([]int32, minSlots), seed: maphash.MakeSeed(), max: max}
}

// find4 returns the slot of the v4 row k: the one holding it, or the
// empty one where it goes.
func (t *table) find4(k *key4) *int32 {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Comparable(t.seed, *k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if *s == 0 || *s > 0 && t.rows.v4.keys[*s-1] == *k {
			return s
		}
	}
}

// findWide returns the slot of the wide row k, as find4.
func (t *table) findWide(k *aggKey) *int32 {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Comparable(t.seed, *k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if *s == 0 || *s < 0 && t.rows.wide.keys[-*s-1] == *k {
			return s
		}
	}
}

// grow doubles the index and places every row again.
func (t *table) grow() {
	t.slots = make([]int32, 2*len(t.slots))
	for i := range t.rows.v4.keys {
		*t.find4(&t.rows.v4.keys[i]) = int32(i + 1)
	}
	for i := range t.rows.wide.keys {
		*t.findWide(&t.rows.wide.keys[i]) = -int32(i + 1)
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
	var v *aggVal
	if f.src.Is4() && f.dst.Is4() {
		k := key4{src: f.src.As4(), dst: f.dst.As4(), proto: f.proto, port: servicePort(f)}
		s := t.find4(&k)
		if *s == 0 {
			if t.rows.Len() >= t.max {
				return false
			}
			*s = int32(t.rows.v4.push(k, t.hint4, t.max) + 1)
			t.placed()
		}
		v = &t.rows.v4.vals[*s-1] // s is in the old index if it grew: still right
	} else {
		k := aggKey{proto: f.proto, port: servicePort(f)}
		var sf, df uint8
		k.src, sf = packAddr(f.src)
		k.dst, df = packAddr(f.dst)
		k.fam = sf | df<<2
		s := t.findWide(&k)
		if *s == 0 {
			if t.rows.Len() >= t.max {
				return false
			}
			*s = -int32(t.rows.wide.push(k, t.hintWide, t.max) + 1)
			t.placed()
		}
		v = &t.rows.wide.vals[-*s-1]
	}
	v.bytes += f.bytes
	v.packets += f.packets
	v.flows++
	return true
}

// placed grows the index once a new row makes it more than half full.
func (t *table) placed() {
	if 2*t.rows.Len() > len(t.slots) {
		t.grow()
	}
}

// drain hands over the table's rows, unsorted (sort them with sort,
// outside the listener's lock), and empties it. The rows are handed over
// as the table held them, not copied: the next window gets new ones. A
// large index is dropped rather than cleared, so that its memory goes
// while the window just drained is recorded and applied to the traffic
// projection, serve's peak; the next window grows a new one.
func (t *table) drain() *windowRows {
	out := t.rows
	t.hint4, t.hintWide = len(out.v4.keys), len(out.wide.keys)
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

// rowStore is one store of a table's rows: keys[i] totals vals[i].
type rowStore[K comparable] struct {
	keys []K
	vals []aggVal
}

// push appends the row k with zero totals and returns its index. When
// the store has hint/8 rows (not at its first, while the last window's
// rows are still being recorded) and hint is more, its slices are made
// hint's size at once rather than grown by copying all the way.
func (s *rowStore[K]) push(k K, hint, max int) int {
	n := len(s.keys)
	if n == cap(s.keys) && hint > 0 && n >= hint/8 && n < hint {
		c := min(hint+hint/16, max)
		s.keys = append(make([]K, 0, c), s.keys...)
		s.vals = append(make([]aggVal, 0, c), s.vals...)
	}
	s.keys = append(s.keys, k)
	s.vals = append(s.vals, aggVal{})
	return n
}

// Len and Swap implement sort.Interface.
func (s *rowStore[K]) Len() int { return len(s.keys) }
func (s *rowStore[K]) Swap(i, j int) {
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	s.vals[i], s.vals[j] = s.vals[j], s.vals[i]
}

// byKey4 and byKey sort a store as compareKeys orders its keys.
type (
	byKey4 struct{ *rowStore[key4] }
	byKey  struct{ *rowStore[aggKey] }
)

func (s byKey4) Less(i, j int) bool {
	a1, a2 := s.keys[i].order()
	b1, b2 := s.keys[j].order()
	return a1 < b1 || a1 == b1 && a2 < b2
}

func (s byKey) Less(i, j int) bool { return compareKeys(&s.keys[i], &s.keys[j]) < 0 }

// windowRows are a table's rows; drained, the window's sources.FlowRows.
// Unsorted, the wide rows come first, then the v4 ones; sorted, each
// store is sorted and merge says which store each row comes from, when
// both have rows (a window of one store needs none).
type windowRows struct {
	v4   rowStore[key4]
	wide rowStore[aggKey]
	// merge has a word for each 64 rows: bit i%64 of word i/64 is set
	// when row i is a v4 row, and before counts the v4 rows before the
	// word's first, so Row finds any row with a popcount. 2 bits a row
	// instead of the 32 of an index of positions: at 166,667 rows 49 KB
	// (BenchmarkTableSort/mixed) instead of 667.
	merge []mergeWord
}

type mergeWord struct {
	v4     uint64
	before int32
}

// Len implements sources.FlowRows.
func (w *windowRows) Len() int { return len(w.v4.keys) + len(w.wide.keys) }

// at returns the store of row i (v4 or not) and its index in it.
func (w *windowRows) at(i int) (int, bool) {
	if w.merge == nil {
		if i < len(w.wide.keys) {
			return i, false
		}
		return i - len(w.wide.keys), true
	}
	m := &w.merge[i>>6]
	b := uint(i & 63)
	r := int(m.before) + bits.OnesCount64(m.v4&(1<<b-1))
	if m.v4>>b&1 != 0 {
		return r, true
	}
	return i - r, false
}

// Row implements sources.FlowRows.
func (w *windowRows) Row(i int) sources.FlowRow {
	j, is4 := w.at(i)
	if is4 {
		k, v := &w.v4.keys[j], &w.v4.vals[j]
		return sources.FlowRow{Src: netip.AddrFrom4(k.src), Dst: netip.AddrFrom4(k.dst), Proto: k.proto, Port: k.port, Bytes: v.bytes, Packets: v.packets, Flows: v.flows}
	}
	k, v := &w.wide.keys[j], &w.wide.vals[j]
	return sources.FlowRow{Src: unpackAddr(k.src, k.fam&3), Dst: unpackAddr(k.dst, k.fam>>2), Proto: k.proto, Port: k.port, Bytes: v.bytes, Packets: v.packets, Flows: v.flows}
}

// sort puts the rows in the order of sources.FlowWindow.Rows: it sorts
// each store and, when both have rows, merges them.
func (w *windowRows) sort() {
	sort.Sort(byKey4{&w.v4})
	sort.Sort(byKey{&w.wide})
	w.merge = nil
	n4, nw := len(w.v4.keys), len(w.wide.keys)
	if n4 == 0 || nw == 0 {
		return
	}
	w.merge = make([]mergeWord, (n4+nw+63)/64)
	i4, iw := 0, 0
	for i := range n4 + nw {
		m := &w.merge[i>>6]
		if i&63 == 0 {
			m.before = int32(i4)
		}
		if iw == nw || i4 < n4 && w.v4.keys[i4].before(&w.wide.keys[iw]) {
			m.v4 |= 1 << (i & 63)
			i4++
		} else {
			iw++
		}
	}
}
