package arpsweep

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sockbuf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DefaultBuffer is the socket buffer a packet socket asks for (send and
// receive): a burst of replies on a large network must not overflow it.
const DefaultBuffer = 4 << 20

// transport is what the sweep needs from a link's socket; tests
// substitute a fake.
type transport interface {
	// send one frame; blocks while the socket buffer is full.
	send(frame []byte) error
	// recv one frame into buf with its packet type (unix.PACKET_HOST,
	// PACKET_BROADCAST, PACKET_OUTGOING...); returns
	// os.ErrDeadlineExceeded after SetReadDeadline passes.
	recv(buf []byte) (n int, pktType uint8, err error)
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	close() error
}

// replyFilter is the classic BPF program attached to every socket: the
// kernel passes ARP replies only, so the requests every host broadcasts
// never wake the reader.
var replyFilter = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 12, Size: 2}, // EtherType
	bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: etherTypeARP, SkipTrue: 3},
	bpf.LoadAbsolute{Off: ethHeaderLen + 6, Size: 2}, // ARP operation
	bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: opReply, SkipTrue: 1},
	bpf.RetConstant{Val: 1 << 16},
	bpf.RetConstant{Val: 0},
}

// htons converts a 16-bit value to network byte order for sockaddr_ll.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// conn is an AF_PACKET socket bound to one interface and to ARP,
// registered with the runtime's poller.
type conn struct {
	f  *os.File
	rc syscall.RawConn

	// Send state reused by every request, so sending allocates nothing.
	frame   []byte
	sendErr error
	writeFn func(fd uintptr) bool

	// Receive state, used only by the reader goroutine.
	rbuf   []byte
	rn     int
	rfrom  unix.Sockaddr
	rerr   error
	readFn func(fd uintptr) bool
}

// openConn opens a packet socket on interface ifindex. The socket is
// created without a protocol (it receives nothing), given the filter,
// then bound to ARP on the interface, so no unfiltered frame is queued.
func openConn(ifindex, bufSize int) (*conn, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket(AF_PACKET)", err)
	}
	fail := func(what string, err error) (*conn, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	raw, err := bpf.Assemble(replyFilter)
	if err != nil {
		return fail("assemble the reply filter", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		prog[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		return fail("attach the reply filter", err)
	}
	sockbuf.Grow(fd, bufSize)
	// Linux ≥ 4.20: frames other sockets send (the kernel's own ARP
	// replies) are not looped back to us; older kernels mark them
	// PACKET_OUTGOING, which the reader drops.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(etherTypeARP), Ifindex: ifindex}); err != nil {
		return fail(fmt.Sprintf("bind to interface %d", ifindex), err)
	}
	c := &conn{rbuf: make([]byte, 1600)}
	c.f = os.NewFile(uintptr(fd), fmt.Sprintf("arp-%d", ifindex))
	if c.rc, err = c.f.SyscallConn(); err != nil {
		c.f.Close()
		return nil, err
	}
	c.writeFn = func(fd uintptr) bool {
		_, c.sendErr = unix.Write(int(fd), c.frame)
		return c.sendErr != unix.EAGAIN
	}
	c.readFn = func(fd uintptr) bool {
		c.rn, c.rfrom, c.rerr = unix.Recvfrom(int(fd), c.rbuf, 0)
		return c.rerr != unix.EAGAIN
	}
	return c, nil
}

func (c *conn) send(frame []byte) error {
	c.frame = frame
	if err := c.rc.Write(c.writeFn); err != nil {
		return err
	}
	return c.sendErr
}

func (c *conn) recv(buf []byte) (int, uint8, error) {
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, 0, err
	}
	if c.rerr != nil {
		return 0, 0, c.rerr
	}
	var pt uint8
	if sa, ok := c.rfrom.(*unix.SockaddrLinklayer); ok {
		pt = sa.Pkttype
	}
	return copy(buf, c.rbuf[:c.rn]), pt, nil
}

func (c *conn) SetReadDeadline(t time.Time) error  { return c.f.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }
func (c *conn) close() error                       { return c.f.Close() }
