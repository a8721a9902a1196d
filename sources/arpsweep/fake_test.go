package arpsweep

import (
	"net"
	"net/netip"

	"github.com/jocasta/jocasta/sources/internal/sweeptest"
	"golang.org/x/sys/unix"
)

// fakeLink answers ARP requests for its responders the way hosts on a
// link would, and lets tests inject send errors and stray frames.
type fakeLink struct {
	// responders maps an address to its MAC; answerFrom, when set, is
	// the attempt from which it answers (1 = the first request).
	responders map[netip.Addr]net.HardwareAddr
	answerFrom map[netip.Addr]int
	// extra, when set, returns more frames to deliver after a request
	// to dst (stray traffic).
	extra   func(dst netip.Addr) []fakeFrame
	discard bool // do not parse or record sends (allocation benchmark)

	sweeptest.SendLog           // requests: attempts, accepted, SendErr
	*sweeptest.Queue[fakeFrame] // received frames; read deadline
}

type fakeFrame struct {
	b  []byte
	pt uint8
}

func newFakeLink(responders map[string]string) *fakeLink {
	f := &fakeLink{
		responders: map[netip.Addr]net.HardwareAddr{},
		answerFrom: map[netip.Addr]int{},
		Queue:      sweeptest.NewQueue[fakeFrame](1 << 16),
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
	n, err := f.Attempt(dst)
	if err != nil {
		return err
	}
	if mac, ok := f.responders[dst]; ok && n >= f.answerFrom[dst] {
		f.Put(fakeFrame{replyFrame(mac.String(), dst.String(), p.SenderMAC.String(), p.SenderIP.String()), unix.PACKET_HOST})
	}
	if f.extra != nil {
		for _, x := range f.extra(dst) {
			f.Put(x)
		}
	}
	return nil
}

func (f *fakeLink) recv(buf []byte) (int, uint8, error) {
	fr, err := f.Recv()
	if err != nil {
		return 0, 0, err
	}
	return copy(buf, fr.b), fr.pt, nil
}
