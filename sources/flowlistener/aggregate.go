package flowlistener

import (
	"bytes"
	"cmp"
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

// table aggregates one window's flows. Rows are kept in two slices
// indexed from the map, so a flow of a known row costs one map lookup and
// no allocation; the totals apart from the keys, since they are what
// every flow writes (50,000 rows: 1.2 MB of totals, 3.2 MB with the
// keys beside them, which leaves the cache).
type table struct {
	idx  map[aggKey]int32
	rows windowRows
	max  int
}

func newTable(max int) *table {
	return &table{idx: make(map[aggKey]int32, 1024), max: max}
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
	i, ok := t.idx[k]
	if !ok {
		if len(t.rows.vals) >= t.max {
			return false
		}
		i = int32(len(t.rows.vals))
		t.idx[k] = i
		t.rows.keys = append(t.rows.keys, k)
		t.rows.vals = append(t.rows.vals, aggVal{})
	}
	r := &t.rows.vals[i]
	r.bytes += f.bytes
	r.packets += f.packets
	r.flows++
	return true
}

// drain hands over the table's rows, unsorted (sort them with sort,
// outside the listener's lock), and empties it. The rows are handed
// over as the table held them, not copied: the next window gets new
// ones. A large table's index is dropped rather than cleared: the window
// just drained is recorded and applied to the traffic projection in the
// next seconds, serve's peak, and a cleared map keeps all its memory
// (166,667 rows: about 8 MB). The next window grows a new one, a few
// allocations per doubling.
func (t *table) drain() *windowRows {
	out := t.rows
	if len(out.keys) > keepRows {
		t.idx = make(map[aggKey]int32, 1024)
	} else {
		clear(t.idx)
	}
	t.rows = windowRows{}
	return &out
}

// keepRows is the largest table index drain keeps for the next window.
const keepRows = 1 << 16

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
