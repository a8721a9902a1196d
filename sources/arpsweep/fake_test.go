package arpsweep

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// fakeLink answers ARP requests for its responders the way hosts on a
// link would, and lets tests inject send errors and stray frames.
type fakeLink struct {
	mu sync.Mutex
	// responders maps an address to its MAC; answerFrom, when set, is
	// the attempt from which it answers (1 = the first request).
	responders map[netip.Addr]net.HardwareAddr
	answerFrom map[netip.Addr]int
	sent       []netip.Addr // every accepted request, in order
	attempts   map[netip.Addr]int
	// sendErr, when set, decides the error of an attempt (n counts the
	// attempts to dst, from 1).
	sendErr func(dst netip.Addr, n int) error
	// extra, when set, returns more frames to deliver after a request
	// to dst (stray traffic).
	extra   func(dst netip.Addr) []fakeFrame
	discard bool // do not parse or record sends (allocation benchmark)

	frames chan fakeFrame
	rdl    time.Time
	wake   chan struct{}
}

type fakeFrame struct {
	b  []byte
	pt uint8
}

func newFakeLink(responders map[string]string) *fakeLink {
	f := &fakeLink{
		responders: map[netip.Addr]net.HardwareAddr{},
		answerFrom: map[netip.Addr]int{},
		attempts:   map[netip.Addr]int{},
		frames:     make(chan fakeFrame, 1<<16),
		wake:       make(chan struct{}),
	}
	for ip, mac := range responders {
		f.responders[netip.MustParseAddr(ip)] = mustMAC(mac)
	}
	return f
}

func (f *fakeLink) close() error { return nil }

func (f *fakeLink) send(b []byte) error {
	if f.discard {
		return nil
	}
	p, err := parseFrame(b)
	if err != nil || p.Op != opRequest {
		panic("the sweep sent something other than a request")
	}
	dst := p.TargetIP
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[dst]++
	if f.sendErr != nil {
		if err := f.sendErr(dst, f.attempts[dst]); err != nil {
			return err
		}
	}
	f.sent = append(f.sent, dst)
	if mac, ok := f.responders[dst]; ok && f.attempts[dst] >= f.answerFrom[dst] {
		f.frames <- fakeFrame{replyFrame(mac.String(), dst.String(), p.SenderMAC.String(), p.SenderIP.String()), unix.PACKET_HOST}
	}
	if f.extra != nil {
		for _, x := range f.extra(dst) {
			f.frames <- x
		}
	}
	return nil
}

func (f *fakeLink) recv(buf []byte) (int, uint8, error) {
	for {
		f.mu.Lock()
		dl, wake := f.rdl, f.wake
		f.mu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, 0, os.ErrDeadlineExceeded
			}
			tm := time.NewTimer(d)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case fr := <-f.frames:
			return copy(buf, fr.b), fr.pt, nil
		case <-timeout:
			return 0, 0, os.ErrDeadlineExceeded
		case <-wake:
		}
	}
}

func (f *fakeLink) setReadDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rdl = t
	close(f.wake)
	f.wake = make(chan struct{})
	return nil
}

func (f *fakeLink) setWriteDeadline(time.Time) error { return nil }

func (f *fakeLink) sentList() []netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.Addr(nil), f.sent...)
}
