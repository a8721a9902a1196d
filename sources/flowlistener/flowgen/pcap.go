package flowgen

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Conv is one conversation of a packet capture: A talks to B over TCP or
// UDP, sending Packets packets of PayloadAB bytes each and getting as
// many of PayloadBA bytes back (none back when PayloadBA < 0).
type Conv struct {
	A, B         netip.Addr // IPv4
	Proto        uint8      // 6 (TCP) or 17 (UDP)
	APort, BPort uint16
	Packets      int
	PayloadAB    int
	PayloadBA    int
}

// headerLen is the IPv4 + transport header length of the packets
// WritePcap writes (no options).
func (c Conv) headerLen() int {
	if c.Proto == 17 {
		return 20 + 8
	}
	return 20 + 20
}

// BytesAB is what an exporter counts from A to B: the IP length of each
// packet (IP header, transport header, payload), and BytesBA back.
func (c Conv) BytesAB() uint64 { return uint64(c.Packets * (c.headerLen() + c.PayloadAB)) }

// BytesBA is the IP bytes from B to A (0 when B does not answer).
func (c Conv) BytesBA() uint64 {
	if c.PayloadBA < 0 {
		return 0
	}
	return uint64(c.Packets * (c.headerLen() + c.PayloadBA))
}

// PacketsBA is the packets from B to A.
func (c Conv) PacketsBA() uint64 {
	if c.PayloadBA < 0 {
		return 0
	}
	return uint64(c.Packets)
}

// WritePcap writes convs as an Ethernet packet capture (libpcap format)
// to w, the packets 1 ms apart from start, each conversation's packets
// alternating A→B, B→A. softflowd -r and nfpcapd -r read it.
func WritePcap(w io.Writer, start time.Time, convs []Conv) error {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return fmt.Errorf("flowgen: pcap header: %w", err)
	}
	macA := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
	at := start
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	write := func(c Conv, fromA bool, payload int) error {
		src, dst, sp, dp, sm, dm := c.A, c.B, c.APort, c.BPort, macA, macB
		if !fromA {
			src, dst, sp, dp, sm, dm = c.B, c.A, c.BPort, c.APort, macB, macA
		}
		if !src.Is4() || !dst.Is4() {
			return fmt.Errorf("flowgen: pcap: %v -> %v: IPv4 only", src, dst)
		}
		eth := &layers.Ethernet{SrcMAC: sm, DstMAC: dm, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		var l4 gopacket.SerializableLayer
		switch c.Proto {
		case 6:
			ip.Protocol = layers.IPProtocolTCP
			tcp := &layers.TCP{SrcPort: layers.TCPPort(sp), DstPort: layers.TCPPort(dp), ACK: true, PSH: true, Seq: 1, Ack: 1, Window: 65535}
			if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
				return err
			}
			l4 = tcp
		case 17:
			ip.Protocol = layers.IPProtocolUDP
			udp := &layers.UDP{SrcPort: layers.UDPPort(sp), DstPort: layers.UDPPort(dp)}
			if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
				return err
			}
			l4 = udp
		default:
			return fmt.Errorf("flowgen: pcap: protocol %d: want 6 or 17", c.Proto)
		}
		if err := gopacket.SerializeLayers(buf, opts, eth, ip, l4, gopacket.Payload(make([]byte, payload))); err != nil {
			return fmt.Errorf("flowgen: pcap: serialize: %w", err)
		}
		b := buf.Bytes()
		at = at.Add(time.Millisecond)
		if err := pw.WritePacket(gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(b), Length: len(b)}, b); err != nil {
			return fmt.Errorf("flowgen: pcap: write: %w", err)
		}
		return nil
	}
	for _, c := range convs {
		for range c.Packets {
			if err := write(c, true, c.PayloadAB); err != nil {
				return err
			}
			if c.PayloadBA >= 0 {
				if err := write(c, false, c.PayloadBA); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
