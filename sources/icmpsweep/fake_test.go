package icmpsweep

import (
	"encoding/binary"
	"net/netip"
	"os"
	"sync"
	"time"
)

// fakeTransport answers echo requests for its responders, the way the
// kernel's socket would hand them back, and lets tests inject send errors.
type fakeTransport struct {
	m     Mode
	v6    bool
	ident uint16

	mu         sync.Mutex
	responders map[netip.Addr]bool
	sent       []netip.Addr // every accepted probe, in order
	attempts   map[netip.Addr]int
	// sendErr, when set, decides the error of an attempt (n counts the
	// attempts to dst, from 1).
	sendErr func(dst netip.Addr, n int) error
	// mangle, when set, may rewrite a reply (wrong id, token...).
	mangle  func(b []byte)
	discard bool // do not record sends (allocation tests)

	replies chan fakePacket
	rdl     time.Time
	wake    chan struct{}
}

type fakePacket struct {
	from netip.Addr
	b    []byte
}

func newFake(m Mode, v6 bool, responders ...string) *fakeTransport {
	f := &fakeTransport{
		m: m, v6: v6, ident: 0x4242,
		responders: map[netip.Addr]bool{},
		attempts:   map[netip.Addr]int{},
		replies:    make(chan fakePacket, 1<<16),
		wake:       make(chan struct{}),
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
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[dst]++
	if f.sendErr != nil {
		if err := f.sendErr(dst, f.attempts[dst]); err != nil {
			return err
		}
	}
	f.sent = append(f.sent, dst)
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
	f.replies <- fakePacket{from: dst, b: b}
	return nil
}

func (f *fakeTransport) recv(buf []byte) (int, netip.Addr, error) {
	for {
		f.mu.Lock()
		dl, wake := f.rdl, f.wake
		f.mu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, netip.Addr{}, os.ErrDeadlineExceeded
			}
			tm := time.NewTimer(d)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case p := <-f.replies:
			return copy(buf, p.b), p.from, nil
		case <-timeout:
			return 0, netip.Addr{}, os.ErrDeadlineExceeded
		case <-wake:
		}
	}
}

func (f *fakeTransport) setReadDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rdl = t
	close(f.wake)
	f.wake = make(chan struct{})
	return nil
}

func (f *fakeTransport) setWriteDeadline(time.Time) error { return nil }

func (f *fakeTransport) sentList() []netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.Addr(nil), f.sent...)
}
