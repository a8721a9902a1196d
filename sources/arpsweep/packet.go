package arpsweep

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Frame layout: an Ethernet II header and an ARP packet for IPv4 over
// Ethernet (RFC 826), padded to the 60-byte Ethernet minimum.
const (
	ethHeaderLen = 14
	arpLen       = 28
	minFrameLen  = ethHeaderLen + arpLen // what a frame must hold to parse
	requestLen   = 60                    // a request, padded (the FCS is the NIC's)
	etherTypeARP = 0x0806                // = layers.EthernetTypeARP: the socket's protocol and filter
	opRequest    = layers.ARPRequest
	opReply      = layers.ARPReply
)

// packet is a parsed ARP frame. Its MACs alias the frame it was parsed
// from: copy one before the frame's buffer is reused.
type packet struct {
	EthDst, EthSrc net.HardwareAddr // 6 bytes each
	Op             uint16
	SenderMAC      net.HardwareAddr
	SenderIP       netip.Addr
	TargetMAC      net.HardwareAddr
	TargetIP       netip.Addr
}

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// requestWriter builds who-has requests with gopacket's layers. A sweep
// asks many addresses from one sender, so the frame is serialized once
// per sender and each request then only writes its target address into
// it (dstOffset): no allocation and no serialization per request.
type requestWriter struct {
	buf          gopacket.SerializeBuffer
	eth          layers.Ethernet
	arp          layers.ARP
	srcMAC       [6]byte
	srcIP, dstIP [4]byte
	zero         [6]byte
	built        bool
	frame        []byte
}

// dstOffset is where the target protocol address sits in a request:
// after the Ethernet header and the ARP header, sender MAC and address,
// and target MAC.
const dstOffset = ethHeaderLen + 8 + 6 + 4 + 6

func newRequestWriter() *requestWriter {
	w := &requestWriter{buf: gopacket.NewSerializeBufferExpectedSize(ethHeaderLen+arpLen, requestLen-minFrameLen)}
	w.eth = layers.Ethernet{DstMAC: broadcastMAC, SrcMAC: w.srcMAC[:], EthernetType: layers.EthernetTypeARP}
	w.arp = layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: opRequest,
		SourceHwAddress: w.srcMAC[:], SourceProtAddress: w.srcIP[:],
		DstHwAddress: w.zero[:], DstProtAddress: w.dstIP[:], // target MAC: unknown
	}
	return w
}

// put returns a broadcast ARP who-has request for dst from srcMAC/srcIP,
// padded to requestLen bytes. The frame is valid until the next put.
func (w *requestWriter) put(srcMAC [6]byte, srcIP, dst [4]byte) ([]byte, error) {
	if !w.built || srcMAC != w.srcMAC || srcIP != w.srcIP {
		w.srcMAC, w.srcIP, w.dstIP = srcMAC, srcIP, dst
		if err := gopacket.SerializeLayers(w.buf, gopacket.SerializeOptions{}, &w.eth, &w.arp); err != nil {
			w.built = false
			return nil, fmt.Errorf("arpsweep: build request: %w", err)
		}
		w.frame, w.built = w.buf.Bytes(), true
	}
	copy(w.frame[dstOffset:dstOffset+4], dst[:])
	return w.frame, nil
}

// frameParser decodes received frames with a gopacket
// DecodingLayerParser into its own layers: no allocation per frame,
// whether it is kept or refused.
type frameParser struct {
	eth     layers.Ethernet
	arp     layers.ARP
	dlp     *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	err     frameError
}

func newFrameParser() *frameParser {
	p := &frameParser{decoded: make([]gopacket.LayerType, 0, 4)}
	p.dlp = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &p.eth, &p.arp)
	// A frame's padding after the ARP packet is a payload it has no
	// decoder for; anything not ARP stops after Ethernet and is refused
	// below by its EtherType.
	p.dlp.IgnoreUnsupported = true
	return p
}

// frameError says why a frame was refused. It is formatted only when
// printed, so refusing a frame allocates nothing; the parser owns it and
// reuses it on the next parse.
type frameError struct {
	what      string
	got, want uint64
	hex       bool
}

func (e *frameError) Error() string {
	if e.what == "length" {
		return fmt.Sprintf("%v: %d bytes, want at least %d", ErrBadFrame, e.got, e.want)
	}
	if e.what == "address lengths" {
		return fmt.Sprintf("%v: address lengths %d and %d, want 6 and 4", ErrBadFrame, e.got, e.want)
	}
	if e.what == "ARP packet" {
		return fmt.Sprintf("%v: the ARP packet does not decode", ErrBadFrame)
	}
	if e.hex {
		return fmt.Sprintf("%v: %s %#04x, want %s", ErrBadFrame, e.what, e.got, wantName[e.what])
	}
	return fmt.Sprintf("%v: %s %d, want %s", ErrBadFrame, e.what, e.got, wantName[e.what])
}

func (e *frameError) Unwrap() error { return ErrBadFrame }

var wantName = map[string]string{
	"EtherType":     "ARP (0x0806)",
	"hardware type": "Ethernet (1)",
	"protocol type": "IPv4 (0x0800)",
	"operation":     "request (1) or reply (2)",
}

func (p *frameParser) fail(what string, got, want uint64, hex bool) (packet, error) {
	p.err = frameError{what: what, got: got, want: want, hex: hex}
	return packet{}, &p.err
}

// parse decodes an Ethernet frame carrying an ARP packet for IPv4 over
// Ethernet. It checks the layout only (lengths, types); whether the
// packet is a reply worth recording is the sweep's decision. Bytes after
// the ARP packet (padding) are ignored. The packet's MACs and the error
// are valid until the next parse.
func (p *frameParser) parse(b []byte) (packet, error) {
	if len(b) < minFrameLen {
		return p.fail("length", uint64(len(b)), minFrameLen, false)
	}
	if err := p.dlp.DecodeLayers(b, &p.decoded); err != nil {
		// The ARP layer refuses a packet longer than the frame: its
		// address lengths say why.
		if b[18] != 6 || b[19] != 4 {
			return p.fail("address lengths", uint64(b[18]), uint64(b[19]), false)
		}
		return p.fail("ARP packet", 0, 0, false)
	}
	if len(p.decoded) < 1 || p.eth.EthernetType != layers.EthernetTypeARP {
		// A length field (802.3) reads back as the LLC type: report the
		// two bytes as they are.
		return p.fail("EtherType", uint64(uint16(b[12])<<8|uint16(b[13])), 0, true)
	}
	if len(p.decoded) < 2 {
		return p.fail("ARP packet", 0, 0, false)
	}
	a := &p.arp
	if a.AddrType != layers.LinkTypeEthernet {
		return p.fail("hardware type", uint64(a.AddrType), 0, false)
	}
	if a.Protocol != layers.EthernetTypeIPv4 {
		return p.fail("protocol type", uint64(a.Protocol), 0, true)
	}
	if a.HwAddressSize != 6 || a.ProtAddressSize != 4 {
		return p.fail("address lengths", uint64(a.HwAddressSize), uint64(a.ProtAddressSize), false)
	}
	if a.Operation != opRequest && a.Operation != opReply {
		return p.fail("operation", uint64(a.Operation), 0, false)
	}
	return packet{
		EthDst:    p.eth.DstMAC,
		EthSrc:    p.eth.SrcMAC,
		Op:        a.Operation,
		SenderMAC: a.SourceHwAddress,
		SenderIP:  netip.AddrFrom4([4]byte(a.SourceProtAddress)),
		TargetMAC: a.DstHwAddress,
		TargetIP:  netip.AddrFrom4([4]byte(a.DstProtAddress)),
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
