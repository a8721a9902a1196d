package netbios

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
)

// Sizes of the node status exchange.
const (
	requestLen  = 50
	headerLen   = 12
	nameEntLen  = 18 // NAME[15] SUFFIX[1] FLAGS[2]
	typeNBSTAT  = 0x0021
	classIN     = 0x0001
	flagGroup   = 0x80 // first flags byte: group name
	flagsQR     = 0x8000
	maxNameWire = 255 // longest encoded RR name we skip
)

// Name is one entry of a node status name table.
type Name struct {
	// Name is the 15-byte NetBIOS name with its padding removed.
	Name string
	// Suffix is the 16th byte: 0x00 workstation, 0x20 file server, ...
	Suffix byte
	// Group is true for a group name (a workgroup or domain), false for a
	// unique name.
	Group bool
	// Flags are the two raw flag bytes (group, node type, active...).
	Flags uint16
}

// Status is a parsed node status response.
type Status struct {
	// ID is the transaction id of the response.
	ID    uint16
	Names []Name
	// MAC is the unit id from the statistics block; nil when absent or all
	// zero (Samba reports zeros).
	MAC net.HardwareAddr
}

// ComputerName is the first unique name with suffix 0x00, or "".
func (s Status) ComputerName() string {
	for _, n := range s.Names {
		if n.Suffix == 0x00 && !n.Group && n.Name != "" {
			return n.Name
		}
	}
	return ""
}

// Workgroup is the first group name with suffix 0x00, or "".
func (s Status) Workgroup() string {
	for _, n := range s.Names {
		if n.Suffix == 0x00 && n.Group && n.Name != "" {
			return n.Name
		}
	}
	return ""
}

// AppendRequest appends the 50-byte node status request for "*" with
// transaction id id to b.
func AppendRequest(b []byte, id uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, id)
	b = append(b,
		0x00, 0x00, // flags: query, no broadcast
		0x00, 0x01, // QDCOUNT
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // AN, NS, AR
		0x20, // label length: 32 encoded bytes
	)
	// '*' then 15 NUL bytes, first-level encoded (nibble + 'A').
	var raw [16]byte
	raw[0] = '*'
	for _, c := range raw {
		b = append(b, 'A'+c>>4, 'A'+c&0x0f)
	}
	b = append(b, 0x00) // root label
	b = binary.BigEndian.AppendUint16(b, typeNBSTAT)
	b = binary.BigEndian.AppendUint16(b, classIN)
	return b
}

// ParseNodeStatus parses a node status response. It never reads past the
// end of b and rejects any count or length that does not fit.
func ParseNodeStatus(b []byte) (Status, error) {
	var s Status
	if len(b) < headerLen {
		return s, fmt.Errorf("%w: %d bytes, want at least %d", ErrMalformed, len(b), headerLen)
	}
	s.ID = binary.BigEndian.Uint16(b[0:2])
	flags := binary.BigEndian.Uint16(b[2:4])
	if flags&flagsQR == 0 {
		return s, fmt.Errorf("%w: not a response", ErrMalformed)
	}
	if rcode := flags & 0x000f; rcode != 0 {
		return s, fmt.Errorf("%w: error code %d", ErrMalformed, rcode)
	}
	qd := int(binary.BigEndian.Uint16(b[4:6]))
	an := int(binary.BigEndian.Uint16(b[6:8]))
	if an < 1 {
		return s, fmt.Errorf("%w: no answer record", ErrMalformed)
	}
	off := headerLen
	var err error
	// Responses normally carry no question; skip any that are there.
	for range qd {
		if off, err = skipName(b, off); err != nil {
			return s, err
		}
		if off += 4; off > len(b) {
			return s, fmt.Errorf("%w: question past end", ErrMalformed)
		}
	}
	if off, err = skipName(b, off); err != nil {
		return s, err
	}
	if len(b)-off < 10 {
		return s, fmt.Errorf("%w: answer header past end", ErrMalformed)
	}
	rrType := binary.BigEndian.Uint16(b[off:])
	rdLen := int(binary.BigEndian.Uint16(b[off+8:]))
	off += 10
	if rrType != typeNBSTAT {
		return s, fmt.Errorf("%w: record type %#04x, want NBSTAT", ErrMalformed, rrType)
	}
	if rdLen > len(b)-off {
		return s, fmt.Errorf("%w: rdata length %d, only %d bytes left", ErrMalformed, rdLen, len(b)-off)
	}
	rd := b[off : off+rdLen]
	if len(rd) < 1 {
		return s, fmt.Errorf("%w: empty rdata", ErrMalformed)
	}
	num := int(rd[0])
	rd = rd[1:]
	if num*nameEntLen > len(rd) {
		return s, fmt.Errorf("%w: %d names need %d bytes, rdata has %d", ErrMalformed, num, num*nameEntLen, len(rd))
	}
	s.Names = make([]Name, 0, num)
	for i := range num {
		e := rd[i*nameEntLen : (i+1)*nameEntLen]
		s.Names = append(s.Names, Name{
			Name:   cleanName(e[:15]),
			Suffix: e[15],
			Group:  e[16]&flagGroup != 0,
			Flags:  binary.BigEndian.Uint16(e[16:18]),
		})
	}
	stats := rd[num*nameEntLen:]
	if len(stats) >= 6 {
		mac := net.HardwareAddr(append([]byte(nil), stats[:6]...))
		if !allZero(mac) {
			s.MAC = mac
		}
	}
	return s, nil
}

// skipName returns the offset after the (possibly compressed) name at off.
func skipName(b []byte, off int) (int, error) {
	total := 0
	for {
		if off >= len(b) {
			return 0, fmt.Errorf("%w: name past end", ErrMalformed)
		}
		l := int(b[off])
		switch {
		case l == 0:
			return off + 1, nil
		case l&0xc0 == 0xc0:
			if off+2 > len(b) {
				return 0, fmt.Errorf("%w: name pointer past end", ErrMalformed)
			}
			return off + 2, nil
		case l > 63:
			return 0, fmt.Errorf("%w: label length %d", ErrMalformed, l)
		}
		total += l + 1
		if total > maxNameWire {
			return 0, fmt.Errorf("%w: name longer than %d bytes", ErrMalformed, maxNameWire)
		}
		off += 1 + l
	}
}

// cleanName turns a space-padded OEM name into printable text: bytes below
// 0x20 and 0x7f..0x9f become '?', 0xa0..0xff are read as Latin-1.
func cleanName(raw []byte) string {
	var sb strings.Builder
	for _, c := range raw {
		switch {
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		case c >= 0xa0:
			sb.WriteRune(rune(c))
		case c == 0x00:
			sb.WriteByte(' ') // NUL padding
		default:
			sb.WriteByte('?')
		}
	}
	return strings.TrimSpace(sb.String())
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
