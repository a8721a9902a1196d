package flowlistener

import (
	"cmp"
	"net/netip"
	"slices"

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

// table aggregates one window's flows. Rows are kept in a slice indexed
// from the map, so a flow of a known row costs one map lookup and no
// allocation; the map and slice are reused from window to window.
type table struct {
	idx  map[aggKey]int32
	rows []aggVal
	keys []aggKey
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
		if len(t.rows) >= t.max {
			return false
		}
		i = int32(len(t.rows))
		t.idx[k] = i
		t.rows = append(t.rows, aggVal{})
		t.keys = append(t.keys, k)
	}
	r := &t.rows[i]
	r.bytes += f.bytes
	r.packets += f.packets
	r.flows++
	return true
}

// drain returns the table's rows sorted and empties it.
func (t *table) drain() []sources.FlowRow {
	out := make([]sources.FlowRow, len(t.rows))
	for i, k := range t.keys {
		v := t.rows[i]
		out[i] = sources.FlowRow{Src: unpackAddr(k.src, k.fam&3), Dst: unpackAddr(k.dst, k.fam>>2), Proto: k.proto, Port: k.port, Bytes: v.bytes, Packets: v.packets, Flows: v.flows}
	}
	slices.SortFunc(out, func(a, b sources.FlowRow) int {
		if c := a.Src.Compare(b.Src); c != 0 {
			return c
		}
		if c := a.Dst.Compare(b.Dst); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Proto, b.Proto); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
	if len(t.keys) > keepRows {
		// A large table is dropped rather than cleared: the window just
		// drained is recorded and applied to the traffic projection in the
		// next seconds, serve's peak, and a cleared map keeps all its
		// memory (166,667 rows: about 20 MB). The next window grows a new
		// one, a few allocations per doubling.
		t.idx, t.rows, t.keys = make(map[aggKey]int32, 1024), nil, nil
		return out
	}
	clear(t.idx)
	t.rows, t.keys = t.rows[:0], t.keys[:0]
	return out
}

// keepRows is the largest table drain keeps for the next window.
const keepRows = 1 << 16
