package main

import (
	"fmt"
	"sync"
	"syscall"
	"time"
)

// diskSpace reports the free space of the filesystem that holds the
// database (httpapi.DiskSpace), asking the kernel at most once per
// diskSpaceEvery so that a burst of writes costs one statfs.
type diskSpace struct {
	dir   string
	now   func() time.Time
	statf func(path string, st *syscall.Statfs_t) error

	mu          sync.Mutex
	at          time.Time
	free, total uint64
	err         error
}

const diskSpaceEvery = 2 * time.Second

func newDiskSpace(dir string) *diskSpace {
	return &diskSpace{dir: dir, now: time.Now, statf: syscall.Statfs}
}

// DiskSpace implements httpapi.DiskSpace: the bytes an unprivileged
// process may still write (f_bavail) and the filesystem's size.
func (d *diskSpace) DiskSpace() (free, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if d.at.IsZero() || now.Sub(d.at) >= diskSpaceEvery {
		var st syscall.Statfs_t
		if err := d.statf(d.dir, &st); err != nil {
			d.free, d.total, d.err = 0, 0, fmt.Errorf("disk space of %s: %w", d.dir, err)
		} else {
			d.free, d.total, d.err = st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize), nil
		}
		d.at = now
	}
	return d.free, d.total, d.err
}
