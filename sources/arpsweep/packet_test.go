package arpsweep

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// frame builds an ARP frame by hand, independently of putRequest.
func frame(op uint16, ethDst, ethSrc, sha string, spa string, tha string, tpa string) []byte {
	b := make([]byte, 0, 60)
	b = append(b, mustMAC(ethDst)...)
	b = append(b, mustMAC(ethSrc)...)
	b = append(b, 0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, byte(op>>8), byte(op))
	b = append(b, mustMAC(sha)...)
	b = append(b, netip.MustParseAddr(spa).AsSlice()...)
	b = append(b, mustMAC(tha)...)
	b = append(b, netip.MustParseAddr(tpa).AsSlice()...)
	return append(b, make([]byte, 18)...) // padding
}

func replyFrame(from, fromIP, to, toIP string) []byte {
	return frame(opReply, to, from, from, fromIP, to, toIP)
}

// parseFrame parses b with a parser of its own, and putRequest builds a
// request with a writer of its own (tests; the sweep reuses both).
func parseFrame(b []byte) (packet, error) { return newFrameParser().parse(b) }

func putRequest(srcMAC [6]byte, srcIP, dst [4]byte) []byte {
	b, err := newRequestWriter().put(srcMAC, srcIP, dst)
	if err != nil {
		panic(err)
	}
	return bytes.Clone(b)
}

func TestPutRequest(t *testing.T) {
	w := newRequestWriter()
	// An earlier request's values must not leak into the next one.
	if _, err := w.put([6]byte{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}, [4]byte{0xee, 0xee, 0xee, 0xee}, [4]byte{0xee, 0xee, 0xee, 0xee}); err != nil {
		t.Fatal(err)
	}
	got, err := w.put([6]byte(mustMAC("00:16:3e:4d:00:02")), [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 1, 130})
	if err != nil {
		t.Fatal(err)
	}
	got = bytes.Clone(got)                             // valid until the next put
	want := "ffffffffffff" + "00163e4d0002" + "0806" + // Ethernet: broadcast, from us, ARP
		"0001" + "0800" + "06" + "04" + "0001" + // Ethernet/IPv4, request
		"00163e4d0002" + "0a4d0002" + // sender
		"000000000000" + "0a4d0182" + // target: MAC unknown
		strings.Repeat("00", 18) // padding to 60 bytes
	if hex.EncodeToString(got) != want {
		t.Errorf("request\n%x\nwant\n%s", got, want)
	}
	if !bytes.Equal(got, frame(opRequest, "ff:ff:ff:ff:ff:ff", "00:16:3e:4d:00:02", "00:16:3e:4d:00:02", "10.77.0.2", "00:00:00:00:00:00", "10.77.1.130")) {
		t.Error("request differs from the hand-built frame")
	}
	// The next requests: another target from the same sender, then
	// another sender (the frame is rebuilt).
	for _, tc := range []struct {
		mac      string
		src, dst [4]byte
	}{
		{"00:16:3e:4d:00:02", [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 3, 4}},
		{"02:00:00:00:00:09", [4]byte{10, 9, 0, 1}, [4]byte{10, 9, 0, 200}},
		{"02:00:00:00:00:09", [4]byte{10, 9, 0, 1}, [4]byte{10, 9, 0, 201}},
	} {
		got, err := w.put([6]byte(mustMAC(tc.mac)), tc.src, tc.dst)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := netip.AddrFrom4(tc.src).String(), netip.AddrFrom4(tc.dst).String()
		if want := frame(opRequest, "ff:ff:ff:ff:ff:ff", tc.mac, tc.mac, src, "00:00:00:00:00:00", dst); !bytes.Equal(got, want) {
			t.Errorf("request %s -> %s\n%x\nwant\n%x", src, dst, got, want)
		}
	}
	p, err := parseFrame(got)
	if err != nil {
		t.Fatal(err)
	}
	if p.Op != opRequest || p.SenderIP != netip.MustParseAddr("10.77.0.2") || p.TargetIP != netip.MustParseAddr("10.77.1.130") ||
		p.SenderMAC.String() != "00:16:3e:4d:00:02" || p.EthDst.String() != "ff:ff:ff:ff:ff:ff" {
		t.Errorf("parsed request %+v", p)
	}
}

func TestParseFrame(t *testing.T) {
	reply := replyFrame("02:42:0a:4d:00:0d", "10.77.0.13", "00:16:3e:4d:00:02", "10.77.0.2")
	p, err := parseFrame(reply)
	if err != nil {
		t.Fatal(err)
	}
	want := packet{
		EthDst: mustMAC("00:16:3e:4d:00:02"), EthSrc: mustMAC("02:42:0a:4d:00:0d"), Op: opReply,
		SenderMAC: mustMAC("02:42:0a:4d:00:0d"), SenderIP: netip.MustParseAddr("10.77.0.13"),
		TargetMAC: mustMAC("00:16:3e:4d:00:02"), TargetIP: netip.MustParseAddr("10.77.0.2"),
	}
	if p.String() != want.String() {
		t.Errorf("parsed\n%v\nwant\n%v", p, want)
	}
	// One parser parses frame after frame: nothing of the first stays.
	fp := newFrameParser()
	if _, err := fp.parse(good(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := fp.parse(reply[:20]); err == nil {
		t.Fatal("a runt after a good frame parsed")
	}
	if p2, err := fp.parse(reply); err != nil || p2.String() != want.String() {
		t.Errorf("reused parser: %v, %v", p2, err)
	}
	// Padding is optional (the kernel strips nothing, but a 42-byte frame
	// is complete).
	if _, err := parseFrame(reply[:minFrameLen]); err != nil {
		t.Errorf("42-byte frame: %v", err)
	}

	set := func(off int, v ...byte) []byte {
		b := replyFrame("02:42:0a:4d:00:0d", "10.77.0.13", "00:16:3e:4d:00:02", "10.77.0.2")
		copy(b[off:], v)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "0 bytes, want at least 42"},
		{"short", reply[:41], "41 bytes"},
		{"IPv4 EtherType", set(12, 0x08, 0x00), "EtherType 0x0800"},
		{"VLAN tag", set(12, 0x81, 0x00), "EtherType 0x8100"},
		{"token ring hardware", set(14, 0, 6), "hardware type 6"},
		{"IPv6 protocol", set(16, 0x86, 0xdd), "protocol type 0x86dd"},
		{"long hardware address", set(18, 8), "address lengths 8 and 4"},
		{"IPv6 address length", set(19, 16), "address lengths 6 and 16"},
		{"RARP reply", set(20, 0, 4), "operation 4"},
		{"zero operation", set(20, 0, 0), "operation 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseFrame(tt.b)
			if !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseFrame = %+v, %v; want ErrBadFrame with %q", p, err, tt.want)
			}
		})
	}
}

func good(t *testing.T) []byte {
	t.Helper()
	return replyFrame("02:00:00:00:00:01", "10.0.0.1", "02:00:00:00:00:02", "10.0.0.2")
}

func (p packet) String() string {
	return fmt.Sprintf("%v > %v op %d: %v %v > %v %v", p.EthSrc, p.EthDst, p.Op, p.SenderMAC, p.SenderIP, p.TargetMAC, p.TargetIP)
}

func TestUnicastMAC(t *testing.T) {
	for m, want := range map[string]bool{
		"00:16:3e:00:00:01": true,
		"02:42:0a:4d:00:0d": true, // locally administered is fine
		"00:00:00:00:00:00": false,
		"ff:ff:ff:ff:ff:ff": false,
		"01:00:5e:00:00:fb": false, // multicast
		"33:33:00:00:00:01": false,
	} {
		if got := unicastMAC(mustMAC(m)); got != want {
			t.Errorf("unicastMAC(%s) = %v", m, got)
		}
	}
	if unicastMAC(net.HardwareAddr{1, 2, 3}) {
		t.Error("a 3-byte MAC is not a unicast MAC")
	}
}

// The kernel filter passes ARP replies and nothing else.
func TestReplyFilter(t *testing.T) {
	vm, err := bpf.NewVM(replyFilter)
	if err != nil {
		t.Fatal(err)
	}
	ipv4 := replyFrame("02:00:00:00:00:01", "10.0.0.1", "02:00:00:00:00:02", "10.0.0.2")
	binary.BigEndian.PutUint16(ipv4[12:], 0x0800)
	tests := []struct {
		name string
		b    []byte
		pass bool
	}{
		{"reply", replyFrame("02:00:00:00:00:01", "10.0.0.1", "02:00:00:00:00:02", "10.0.0.2"), true},
		{"request", frame(opRequest, "ff:ff:ff:ff:ff:ff", "02:00:00:00:00:01", "02:00:00:00:00:01", "10.0.0.1", "00:00:00:00:00:00", "10.0.0.9"), false},
		{"IPv4 frame", ipv4, false},
		{"runt", []byte{1, 2, 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := vm.Run(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != tt.pass {
				t.Errorf("filter returned %d, want pass=%v", n, tt.pass)
			}
		})
	}
	if _, err := bpf.Assemble(replyFilter); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseARP(f *testing.F) {
	f.Add(replyFrame("02:42:0a:4d:00:0d", "10.77.0.13", "00:16:3e:4d:00:02", "10.77.0.2"))
	f.Add(putRequest([6]byte{2, 0, 0, 0, 0, 1}, [4]byte{192, 0, 2, 1}, [4]byte{192, 0, 2, 9}))
	f.Add([]byte{})
	f.Add(make([]byte, 41))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		p, err := parseFrame(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("parseFrame modified its input")
		}
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error %v does not wrap ErrBadFrame", err)
			}
			return
		}
		// What parses re-encodes to the same 42 bytes.
		again := frame(p.Op, p.EthDst.String(), p.EthSrc.String(), p.SenderMAC.String(), p.SenderIP.String(), p.TargetMAC.String(), p.TargetIP.String())
		if !bytes.Equal(again[:minFrameLen], b[:minFrameLen]) {
			t.Errorf("reparse mismatch:\n%x\n%x", again[:minFrameLen], b[:minFrameLen])
		}
	})
}
