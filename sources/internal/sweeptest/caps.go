package sweeptest

import (
	"runtime"
	"syscall"
	"unsafe"
)

// DropNetRaw removes CAP_NET_RAW from the effective set of the calling
// thread (capabilities are per thread; lock the goroutine to it, as
// lab.DoInNamespace does) and returns a function that puts it back.
func DropNetRaw() (func(), error) {
	type header struct {
		version uint32
		pid     int32
	}
	type data struct{ effective, permitted, inheritable uint32 }
	const capNetRaw = 13
	h := header{version: 0x20080522}
	var d [2]data
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return nil, e
	}
	orig := d
	d[0].effective &^= 1 << capNetRaw
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return nil, e
	}
	return func() {
		d := orig
		_, _, _ = syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
		runtime.KeepAlive(d)
	}, nil
}
