package icmpsweep

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/jocasta/jocasta/sources/internal/sockbuf"
)

// Mode says which kind of ICMP socket a Pinger uses.
type Mode string

// Socket modes.
const (
	// ModeDatagram is the unprivileged ping socket
	// (SOCK_DGRAM, IPPROTO_ICMP): allowed when the process's group is in
	// net.ipv4.ping_group_range. The kernel sets the echo identifier and
	// delivers only replies to this socket.
	ModeDatagram Mode = "datagram"
	// ModeRaw is a raw ICMP socket: needs CAP_NET_RAW, sees every ICMP
	// echo reply reaching the host (a kernel filter passes only echo
	// replies), matched here on identifier and sweep token.
	ModeRaw Mode = "raw"
)

// DefaultSendBuffer is the socket buffer a Pinger asks for: probes to
// on-link addresses wait in the kernel while ARP/NDP resolves them, and
// a small buffer turns that wait into ENOBUFS/EAGAIN.
const DefaultSendBuffer = 4 << 20

// Options configure [Open].
type Options struct {
	// IPv4 and IPv6 select the sockets to open; both false means IPv4.
	IPv4, IPv6 bool
	// Mode forces a socket kind; empty tries ModeDatagram, then ModeRaw.
	Mode Mode
	// SendBuffer is the SO_SNDBUF/SO_RCVBUF size asked for (default
	// DefaultSendBuffer). Without CAP_NET_ADMIN the kernel caps it at
	// net.core.wmem_max/rmem_max.
	SendBuffer int
}

// Pinger owns the ICMP sockets of a sweep. Sweeps on one Pinger run one at
// a time; Close ends it.
type Pinger struct {
	mu     sync.Mutex // held for a whole Sweep
	c4, c6 transport
	closed bool
}

// Open opens one ICMP socket per address family requested. It fails with
// an error wrapping [ErrNoICMP], and naming both fixes, when neither socket
// kind is allowed.
func Open(opts Options) (*Pinger, error) {
	if !opts.IPv4 && !opts.IPv6 {
		opts.IPv4 = true
	}
	if opts.SendBuffer <= 0 {
		opts.SendBuffer = DefaultSendBuffer
	}
	if opts.Mode != "" && opts.Mode != ModeDatagram && opts.Mode != ModeRaw {
		return nil, fmt.Errorf("icmpsweep: mode %q: want %q or %q", opts.Mode, ModeDatagram, ModeRaw)
	}
	p := &Pinger{}
	if opts.IPv4 {
		c, err := openFamily(false, opts)
		if err != nil {
			return nil, err
		}
		p.c4 = c
	}
	if opts.IPv6 {
		c, err := openFamily(true, opts)
		if err != nil {
			if p.c4 != nil {
				_ = p.c4.close()
			}
			return nil, err
		}
		p.c6 = c
	}
	return p, nil
}

func openFamily(v6 bool, opts Options) (*conn, error) {
	modes := []Mode{ModeDatagram, ModeRaw}
	if opts.Mode != "" {
		modes = []Mode{opts.Mode}
	}
	var errs []error
	var msgs []string
	for _, m := range modes {
		c, err := openConn(v6, m, opts.SendBuffer)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		msgs = append(msgs, fmt.Sprintf("%s: %v", m, err))
	}
	fam := "IPv4"
	if v6 {
		fam = "IPv6"
	}
	return nil, &openError{msg: fmt.Sprintf("%v (%s %s)", ErrNoICMP, fam, strings.Join(msgs, "; ")), errs: errs}
}

// openError keeps the socket errors for errors.Is (EPERM, EACCES) and
// prints on one line.
type openError struct {
	msg  string
	errs []error
}

func (e *openError) Error() string { return e.msg }

func (e *openError) Unwrap() []error { return append([]error{ErrNoICMP}, e.errs...) }

// Mode is the socket kind of the IPv4 socket (of the IPv6 socket when
// only that was opened).
func (p *Pinger) Mode() Mode {
	if p.c4 != nil {
		return p.c4.mode()
	}
	if p.c6 != nil {
		return p.c6.mode()
	}
	return ""
}

// Close closes the sockets; a Sweep in progress returns.
func (p *Pinger) Close() error {
	var errs []error
	for _, c := range []transport{p.c4, p.c6} {
		if c != nil {
			if err := c.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return errors.Join(errs...)
}

// transport is what the sweep needs from a socket; tests substitute a
// fake.
type transport interface {
	mode() Mode
	// ipHeader says received packets start with an IPv4 header.
	ipHeader() bool
	// send one packet; blocks while the socket buffer is full.
	send(pkt []byte, dst netip.Addr) error
	// recv one packet into buf; returns os.ErrDeadlineExceeded after
	// SetReadDeadline passes.
	recv(buf []byte) (int, netip.Addr, error)
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	// id is the echo identifier to put in probes (raw mode matches it).
	id() uint16
	close() error
}

// conn is a real ICMP socket, registered with the runtime's poller.
type conn struct {
	m     Mode
	v6    bool
	ident uint16
	f     *os.File
	rc    syscall.RawConn

	// Send state reused by every probe, so sending allocates nothing.
	sa4     syscall.SockaddrInet4
	sa6     syscall.SockaddrInet6
	to      syscall.Sockaddr
	pkt     []byte
	sendErr error
	writeFn func(fd uintptr) bool

	// Receive state, used only by the reader goroutine.
	rbuf   []byte
	rn     int
	rfrom  syscall.Sockaddr
	rerr   error
	readFn func(fd uintptr) bool
}

func openConn(v6 bool, m Mode, bufSize int) (*conn, error) {
	family, proto := syscall.AF_INET, syscall.IPPROTO_ICMP
	if v6 {
		family, proto = syscall.AF_INET6, syscall.IPPROTO_ICMPV6
	}
	typ := syscall.SOCK_DGRAM
	if m == ModeRaw {
		typ = syscall.SOCK_RAW
	}
	fd, err := syscall.Socket(family, typ|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	sockbuf.Grow(fd, bufSize)
	if m == ModeRaw {
		if err := setEchoReplyFilter(fd, v6); err != nil {
			syscall.Close(fd)
			return nil, err
		}
	}
	c := &conn{m: m, v6: v6, rbuf: make([]byte, 1500)}
	if m == ModeRaw {
		var b [2]byte
		if _, err := readRandom(b[:]); err != nil {
			syscall.Close(fd)
			return nil, err
		}
		c.ident = uint16(b[0])<<8 | uint16(b[1])
	}
	c.f = os.NewFile(uintptr(fd), fmt.Sprintf("icmp-%s", m))
	c.rc, err = c.f.SyscallConn()
	if err != nil {
		c.f.Close()
		return nil, err
	}
	if v6 {
		c.to = &c.sa6
	} else {
		c.to = &c.sa4
	}
	c.writeFn = func(fd uintptr) bool {
		c.sendErr = syscall.Sendto(int(fd), c.pkt, 0, c.to)
		return c.sendErr != syscall.EAGAIN
	}
	c.readFn = func(fd uintptr) bool {
		c.rn, c.rfrom, c.rerr = syscall.Recvfrom(int(fd), c.rbuf, 0)
		return c.rerr != syscall.EAGAIN
	}
	return c, nil
}

// setEchoReplyFilter makes the kernel pass only echo replies to a raw
// socket (ICMP_FILTER for IPv4, ICMP6_FILTER for IPv6): a busy host's
// other ICMP never reaches the reader.
func setEchoReplyFilter(fd int, v6 bool) error {
	if v6 {
		var filter [8]uint32 // bit set = blocked
		for i := range filter {
			filter[i] = 0xffffffff
		}
		filter[typeEchoReply6>>5] &^= 1 << (typeEchoReply6 & 31)
		_, _, e := syscall.Syscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), syscall.IPPROTO_ICMPV6, 1, /* ICMP6_FILTER */
			uintptr(unsafe.Pointer(&filter[0])), unsafe.Sizeof(filter), 0)
		if e != 0 {
			return os.NewSyscallError("setsockopt ICMP6_FILTER", e)
		}
		return nil
	}
	// SOL_RAW (255), ICMP_FILTER (1): a mask of blocked types.
	if err := syscall.SetsockoptInt(fd, 255, 1, ^(1 << typeEchoReply4)); err != nil {
		return os.NewSyscallError("setsockopt ICMP_FILTER", err)
	}
	return nil
}

func (c *conn) mode() Mode     { return c.m }
func (c *conn) ipHeader() bool { return c.m == ModeRaw && !c.v6 }
func (c *conn) id() uint16     { return c.ident }

func (c *conn) send(pkt []byte, dst netip.Addr) error {
	c.pkt = pkt
	if c.v6 {
		c.sa6.Addr = dst.As16()
	} else {
		c.sa4.Addr = dst.As4()
	}
	if err := c.rc.Write(c.writeFn); err != nil {
		return err
	}
	return c.sendErr
}

func (c *conn) recv(buf []byte) (int, netip.Addr, error) {
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, netip.Addr{}, err
	}
	if c.rerr != nil {
		return 0, netip.Addr{}, c.rerr
	}
	var from netip.Addr
	switch sa := c.rfrom.(type) {
	case *syscall.SockaddrInet4:
		from = netip.AddrFrom4(sa.Addr)
	case *syscall.SockaddrInet6:
		from = netip.AddrFrom16(sa.Addr).Unmap()
	}
	return copy(buf, c.rbuf[:c.rn]), from, nil
}

func (c *conn) SetReadDeadline(t time.Time) error  { return c.f.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }
func (c *conn) close() error                       { return c.f.Close() }
