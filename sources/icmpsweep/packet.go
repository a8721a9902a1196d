package icmpsweep

import "encoding/binary"

// ICMP echo types.
const (
	typeEcho4      = 8
	typeEchoReply4 = 0
	typeEcho6      = 128
	typeEchoReply6 = 129
)

// Probe layout: the 8-byte ICMP echo header, then a 16-byte payload that
// every reply echoes back:
//
//	0  type, code, checksum, identifier, sequence
//	8  sweep token (random per sweep; tells our replies from others')
//	16 send time in nanoseconds since the sweep started
//
// Carrying the send time in the probe means no per-address send-time
// table: the reply says when its probe left.
const (
	headerLen = 8
	probeLen  = headerLen + 16
)

// putEcho writes an echo request into b (len ≥ probeLen) and returns the
// packet. The checksum is computed for IPv4; for ICMPv6 the kernel fills
// it in (it covers a pseudo-header the sender does not see).
func putEcho(b []byte, v6 bool, id, seq uint16, token uint64, sentNs int64) []byte {
	b = b[:probeLen]
	if v6 {
		b[0] = typeEcho6
	} else {
		b[0] = typeEcho4
	}
	b[1] = 0
	b[2], b[3] = 0, 0
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	binary.BigEndian.PutUint64(b[8:], token)
	binary.BigEndian.PutUint64(b[16:], uint64(sentNs))
	if !v6 {
		binary.BigEndian.PutUint16(b[2:], checksum(b))
	}
	return b
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// reply is what a received echo reply carries.
type reply struct {
	id, seq uint16
	token   uint64
	sentNs  int64
}

// parseReply decodes an echo reply. ipHeader says the packet starts with
// an IPv4 header (raw IPv4 sockets); ok is false for anything that is not
// an echo reply long enough to carry our payload.
func parseReply(b []byte, v6, ipHeader bool) (r reply, ok bool) {
	if ipHeader {
		if len(b) < 20 || b[0]>>4 != 4 {
			return r, false
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl {
			return r, false
		}
		b = b[ihl:]
	}
	if len(b) < probeLen {
		return r, false
	}
	want := byte(typeEchoReply4)
	if v6 {
		want = typeEchoReply6
	}
	if b[0] != want || b[1] != 0 {
		return r, false
	}
	r.id = binary.BigEndian.Uint16(b[4:])
	r.seq = binary.BigEndian.Uint16(b[6:])
	r.token = binary.BigEndian.Uint64(b[8:])
	r.sentNs = int64(binary.BigEndian.Uint64(b[16:]))
	return r, true
}
