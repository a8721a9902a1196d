package flowgen

import (
	"encoding/binary"
	"net/netip"
)

// Field is one template field specifier. Len 0xFFFF is variable length
// (IPFIX); Enterprise != 0 sets the enterprise bit (IPFIX).
type Field struct {
	Type       uint16
	Len        uint16
	Enterprise uint32
}

// Rec is one flow record's values; fields of a template take from it what
// they name (others are written as zeros, variable-length ones as 3 bytes).
type Rec struct {
	Src, Dst         netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16
	Bytes, Packets   uint64
	SamplerID        uint32
	// InIf is the input interface (INPUT_SNMP, field 10).
	InIf uint32
}

// Common templates.
var (
	// V4 is a typical IPv4 flow template with 4-byte counters.
	V4 = []Field{{8, 4, 0}, {12, 4, 0}, {7, 2, 0}, {11, 2, 0}, {4, 1, 0}, {6, 1, 0}, {1, 4, 0}, {2, 4, 0}, {22, 4, 0}, {21, 4, 0}, {10, 2, 0}, {14, 2, 0}}
	// V6 is an IPv6 flow template with 8-byte counters.
	V6 = []Field{{27, 16, 0}, {28, 16, 0}, {7, 2, 0}, {11, 2, 0}, {4, 1, 0}, {1, 8, 0}, {2, 8, 0}}
	// Odd is an IPFIX template with an enterprise field, a variable-length
	// field and 2-byte (reduced-size) counters between the usual ones.
	Odd = []Field{{8, 4, 0}, {0x1234, 4, 29305}, {12, 4, 0}, {82, 0xFFFF, 0}, {4, 1, 0}, {7, 2, 0}, {11, 2, 0}, {1, 2, 0}, {2, 2, 0}}
)

// V5 builds a NetFlow v5 datagram: flow_sequence seq, sampling 1-in-N
// (0 or 1: unsampled), at most 30 records.
func V5(seq uint32, sampling uint16, recs []Rec) []byte {
	b := make([]byte, 24+48*len(recs))
	be := binary.BigEndian
	be.PutUint16(b[0:], 5)
	be.PutUint16(b[2:], uint16(len(recs)))
	be.PutUint32(b[4:], 120000)
	be.PutUint32(b[8:], 1_700_000_000)
	be.PutUint32(b[16:], seq)
	be.PutUint16(b[22:], sampling&0x3FFF)
	for i, r := range recs {
		o := b[24+48*i:]
		s, d := r.Src.As4(), r.Dst.As4()
		copy(o[0:4], s[:])
		copy(o[4:8], d[:])
		be.PutUint32(o[16:], uint32(r.Packets))
		be.PutUint32(o[20:], uint32(r.Bytes))
		be.PutUint32(o[24:], 100000)
		be.PutUint32(o[28:], 110000)
		be.PutUint16(o[32:], r.SrcPort)
		be.PutUint16(o[34:], r.DstPort)
		o[38] = r.Proto
	}
	return b
}

// Msg is a v9 or IPFIX message being built.
type Msg struct {
	version uint16
	seq     uint32
	domain  uint32
	body    []byte
	count   uint16
}

// NewV9 starts a NetFlow v9 export packet.
func NewV9(seq, sourceID uint32) *Msg { return &Msg{version: 9, seq: seq, domain: sourceID} }

// NewIPFIX starts an IPFIX message.
func NewIPFIX(seq, domain uint32) *Msg { return &Msg{version: 10, seq: seq, domain: domain} }

func (m *Msg) set(id uint16, body []byte) {
	h := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint16(h, id)
	binary.BigEndian.PutUint16(h[2:], uint16(4+len(body)))
	m.body = append(m.body, append(h, body...)...)
}

func (m *Msg) specs(b []byte, fields []Field) []byte {
	for _, f := range fields {
		t := f.Type
		if f.Enterprise != 0 && m.version == 10 {
			t |= 0x8000
		}
		b = binary.BigEndian.AppendUint16(b, t)
		b = binary.BigEndian.AppendUint16(b, f.Len)
		if f.Enterprise != 0 && m.version == 10 {
			b = binary.BigEndian.AppendUint32(b, f.Enterprise)
		}
	}
	return b
}

// Template adds a template set with one template.
func (m *Msg) Template(id uint16, fields []Field) *Msg {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(fields)))
	m.set(m.tplSet(), m.specs(b, fields))
	m.count++
	return m
}

func (m *Msg) tplSet() uint16 {
	if m.version == 10 {
		return 2
	}
	return 0
}

// Withdraw adds an IPFIX template withdrawal (field count 0).
func (m *Msg) Withdraw(id uint16) *Msg {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = binary.BigEndian.AppendUint16(b, 0)
	m.set(2, b)
	return m
}

// OptionsTemplate adds an options template: scope fields, then fields.
func (m *Msg) OptionsTemplate(id uint16, scope, fields []Field) *Msg {
	b := binary.BigEndian.AppendUint16(nil, id)
	if m.version == 10 {
		b = binary.BigEndian.AppendUint16(b, uint16(len(scope)+len(fields)))
		b = binary.BigEndian.AppendUint16(b, uint16(len(scope)))
		b = m.specs(b, append(append([]Field(nil), scope...), fields...))
		m.set(3, b)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(4*len(scope)))
		b = binary.BigEndian.AppendUint16(b, uint16(4*len(fields)))
		b = m.specs(b, append(append([]Field(nil), scope...), fields...))
		m.set(1, b)
	}
	m.count++
	return m
}

// Data adds a data set for template id with recs encoded by fields, and
// pad zero bytes of padding at its end.
func (m *Msg) Data(id uint16, fields []Field, recs []Rec, pad int) *Msg {
	var b []byte
	for _, r := range recs {
		b = AppendRecord(b, fields, r)
		m.count++
	}
	b = append(b, make([]byte, pad)...)
	m.set(id, b)
	return m
}

// OptionsData adds an options data set: each row gives the values of
// scope then fields, in order.
func (m *Msg) OptionsData(id uint16, scope, fields []Field, rows [][]uint64) *Msg {
	all := append(append([]Field(nil), scope...), fields...)
	var b []byte
	for _, row := range rows {
		for i, f := range all {
			b = appendUint(b, f.Len, row[i])
		}
		m.count++
	}
	m.set(id, b)
	return m
}

// Raw adds a set with any id and body (hostile inputs).
func (m *Msg) Raw(id uint16, body []byte) *Msg { m.set(id, body); return m }

// Bytes returns the message with its header.
func (m *Msg) Bytes() []byte {
	be := binary.BigEndian
	var h []byte
	if m.version == 9 {
		h = make([]byte, 20)
		be.PutUint16(h, 9)
		be.PutUint16(h[2:], m.count)
		be.PutUint32(h[4:], 120000)
		be.PutUint32(h[8:], 1_700_000_000)
		be.PutUint32(h[12:], m.seq)
		be.PutUint32(h[16:], m.domain)
	} else {
		h = make([]byte, 16)
		be.PutUint16(h, 10)
		be.PutUint16(h[2:], uint16(16+len(m.body)))
		be.PutUint32(h[4:], 1_700_000_000)
		be.PutUint32(h[8:], m.seq)
		be.PutUint32(h[12:], m.domain)
	}
	return append(h, m.body...)
}

func appendUint(b []byte, n uint16, v uint64) []byte {
	if n == 0xFFFF {
		return append(b, 3, 'a', 'b', 'c')
	}
	for i := int(n) - 1; i >= 0; i-- {
		if i >= 8 {
			b = append(b, 0)
			continue
		}
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// AppendRecord appends one data record of r encoded by fields.
func AppendRecord(b []byte, fields []Field, r Rec) []byte {
	for _, f := range fields {
		if f.Enterprise != 0 {
			b = appendUint(b, f.Len, 0xEE)
			continue
		}
		switch f.Type {
		case 8, 12:
			a := r.Src
			if f.Type == 12 {
				a = r.Dst
			}
			v := a.As4()
			b = append(b, v[:]...)
		case 27, 28:
			a := r.Src
			if f.Type == 28 {
				a = r.Dst
			}
			v := a.As16()
			b = append(b, v[:]...)
		case 1:
			b = appendUint(b, f.Len, r.Bytes)
		case 2:
			b = appendUint(b, f.Len, r.Packets)
		case 4:
			b = appendUint(b, f.Len, uint64(r.Proto))
		case 7:
			b = appendUint(b, f.Len, uint64(r.SrcPort))
		case 11:
			b = appendUint(b, f.Len, uint64(r.DstPort))
		case 48, 302:
			b = appendUint(b, f.Len, uint64(r.SamplerID))
		case 10:
			b = appendUint(b, f.Len, uint64(r.InIf))
		default:
			b = appendUint(b, f.Len, 0)
		}
	}
	return b
}
