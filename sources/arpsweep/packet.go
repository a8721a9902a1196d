package arpsweep

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// Frame layout: an Ethernet II header and an ARP packet for IPv4 over
// Ethernet (RFC 826), padded to the 60-byte Ethernet minimum.
const (
	ethHeaderLen  = 14
	arpLen        = 28
	minFrameLen   = ethHeaderLen + arpLen // what a frame must hold to parse
	requestLen    = 60                    // a request, padded (the FCS is the NIC's)
	etherTypeARP  = 0x0806
	etherTypeIPv4 = 0x0800
	hwEthernet    = 1
	opRequest     = 1
	opReply       = 2
)

// packet is a parsed ARP frame.
type packet struct {
	EthDst, EthSrc net.HardwareAddr // 6 bytes each
	Op             uint16
	SenderMAC      net.HardwareAddr
	SenderIP       netip.Addr
	TargetMAC      net.HardwareAddr
	TargetIP       netip.Addr
}

var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// putRequest writes into b (at least requestLen bytes) a broadcast ARP
// who-has request for dst from srcMAC/srcIP, and returns the frame.
func putRequest(b []byte, srcMAC [6]byte, srcIP, dst [4]byte) []byte {
	b = b[:requestLen]
	copy(b[0:6], broadcastMAC[:])
	copy(b[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(b[12:14], etherTypeARP)
	a := b[ethHeaderLen:]
	binary.BigEndian.PutUint16(a[0:2], hwEthernet)
	binary.BigEndian.PutUint16(a[2:4], etherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], opRequest)
	copy(a[8:14], srcMAC[:])
	copy(a[14:18], srcIP[:])
	clear(a[18:24]) // target MAC: unknown
	copy(a[24:28], dst[:])
	clear(b[minFrameLen:])
	return b
}

// parseFrame decodes an Ethernet frame carrying an ARP packet for IPv4
// over Ethernet. It checks the layout only (lengths, types); whether the
// packet is a reply worth recording is the sweep's decision. Bytes after
// the ARP packet (padding) are ignored.
func parseFrame(b []byte) (packet, error) {
	if len(b) < minFrameLen {
		return packet{}, fmt.Errorf("%w: %d bytes, want at least %d", ErrBadFrame, len(b), minFrameLen)
	}
	if et := binary.BigEndian.Uint16(b[12:14]); et != etherTypeARP {
		return packet{}, fmt.Errorf("%w: EtherType %#04x, want ARP (0x0806)", ErrBadFrame, et)
	}
	a := b[ethHeaderLen:minFrameLen]
	if ht := binary.BigEndian.Uint16(a[0:2]); ht != hwEthernet {
		return packet{}, fmt.Errorf("%w: hardware type %d, want Ethernet (1)", ErrBadFrame, ht)
	}
	if pt := binary.BigEndian.Uint16(a[2:4]); pt != etherTypeIPv4 {
		return packet{}, fmt.Errorf("%w: protocol type %#04x, want IPv4 (0x0800)", ErrBadFrame, pt)
	}
	if a[4] != 6 || a[5] != 4 {
		return packet{}, fmt.Errorf("%w: address lengths %d and %d, want 6 and 4", ErrBadFrame, a[4], a[5])
	}
	op := binary.BigEndian.Uint16(a[6:8])
	if op != opRequest && op != opReply {
		return packet{}, fmt.Errorf("%w: operation %d, want request (1) or reply (2)", ErrBadFrame, op)
	}
	mac := func(x []byte) net.HardwareAddr { return net.HardwareAddr(append(make([]byte, 0, 6), x...)) }
	return packet{
		EthDst:    mac(b[0:6]),
		EthSrc:    mac(b[6:12]),
		Op:        op,
		SenderMAC: mac(a[8:14]),
		SenderIP:  netip.AddrFrom4([4]byte(a[14:18])),
		TargetMAC: mac(a[18:24]),
		TargetIP:  netip.AddrFrom4([4]byte(a[24:28])),
	}, nil
}

// unicastMAC: a MAC that can name one device: not all zeros, not the
// broadcast address, group bit clear.
func unicastMAC(m net.HardwareAddr) bool {
	if len(m) != 6 || m[0]&1 != 0 {
		return false
	}
	for _, b := range m {
		if b != 0 {
			return true
		}
	}
	return false
}
