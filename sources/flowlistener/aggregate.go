package flowlistener

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/jocasta/jocasta/sources"
)

// aggKey is one row of a window: both ends, the protocol and the service
// port.
type aggKey struct {
	src, dst netip.Addr
	proto    uint8
	port     uint16
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
	k := aggKey{src: f.src, dst: f.dst, proto: f.proto, port: servicePort(f)}
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
		out[i] = sources.FlowRow{Src: k.src, Dst: k.dst, Proto: k.proto, Port: k.port, Bytes: v.bytes, Packets: v.packets, Flows: v.flows}
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
	clear(t.idx)
	t.rows, t.keys = t.rows[:0], t.keys[:0]
	if cap(t.keys) > 4*t.max/3+1024 { // do not keep a burst's memory forever
		t.rows, t.keys = nil, nil
	}
	return out
}
