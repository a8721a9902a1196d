package icmpsweep

import (
	"encoding/binary"
	"net/netip"

	"github.com/jocasta/jocasta/sources/internal/sweeptest"
)

// fakeTransport answers echo requests for its responders, the way the
// kernel's socket would hand them back, and lets tests inject send errors.
type fakeTransport struct {
	m     Mode
	v6    bool
	ident uint16

	responders map[netip.Addr]bool
	// mangle, when set, may rewrite a reply (wrong id, token...).
	mangle  func(b []byte)
	discard bool // do not record sends (allocation tests)

	sweeptest.SendLog            // probes: attempts, accepted, SendErr
	*sweeptest.Queue[fakePacket] // replies; read deadline
}

type fakePacket struct {
	from netip.Addr
	b    []byte
}

func newFake(m Mode, v6 bool, responders ...string) *fakeTransport {
	f := &fakeTransport{
		m: m, v6: v6, ident: 0x4242,
		responders: map[netip.Addr]bool{},
		Queue:      sweeptest.NewQueue[fakePacket](1 << 16),
	}
	for _, r := range responders {
		f.responders[netip.MustParseAddr(r)] = true
	}
	return f
}

func (f *fakeTransport) mode() Mode     { return f.m }
func (f *fakeTransport) ipHeader() bool { return f.m == ModeRaw && !f.v6 }
func (f *fakeTransport) id() uint16     { return f.ident }
func (f *fakeTransport) close() error   { return nil }

func (f *fakeTransport) send(pkt []byte, dst netip.Addr) error {
	if f.discard {
		return nil
	}
	if _, err := f.Attempt(dst); err != nil {
		return err
	}
	if !f.responders[dst] {
		return nil
	}
	b := append([]byte(nil), pkt...)
	if f.v6 {
		b[0] = typeEchoReply6
	} else {
		b[0] = typeEchoReply4
	}
	if f.m == ModeDatagram {
		binary.BigEndian.PutUint16(b[4:], 0x7777) // the kernel's id; not checked
	}
	if f.ipHeader() {
		hdr := make([]byte, 20)
		hdr[0] = 0x45
		b = append(hdr, b...)
	}
	if f.mangle != nil {
		f.mangle(b)
	}
	f.Put(fakePacket{from: dst, b: b})
	return nil
}

func (f *fakeTransport) recv(buf []byte) (int, netip.Addr, error) {
	p, err := f.Recv()
	if err != nil {
		return 0, netip.Addr{}, err
	}
	return copy(buf, p.b), p.from, nil
}
