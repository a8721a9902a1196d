package sockbuf

import "golang.org/x/sys/unix"

// Grow asks for size bytes of send and of receive buffer on fd: first
// with the FORCE options (CAP_NET_ADMIN, root, ignores the sysctl caps),
// then within the caps. It does not fail: a smaller buffer still works,
// it only meets back-pressure sooner.
func Grow(fd, size int) {
	set(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, size)
	set(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, size)
}

func set(fd, opt, force, size int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) == nil {
		return
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size)
}
