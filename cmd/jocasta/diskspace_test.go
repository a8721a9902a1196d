package main

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestDiskSpace(t *testing.T) {
	t.Run("the real filesystem", func(t *testing.T) {
		free, total, err := newDiskSpace(t.TempDir()).DiskSpace()
		if err != nil || total == 0 || free > total {
			t.Fatalf("free %d total %d err %v", free, total, err)
		}
	})
	t.Run("cached between asks", func(t *testing.T) {
		d := newDiskSpace("/x")
		now := time.Unix(1000, 0)
		d.now = func() time.Time { return now }
		calls := 0
		d.statf = func(string, *syscall.Statfs_t) error { calls++; return errors.New("no such file") }
		for range 5 {
			if _, _, err := d.DiskSpace(); err == nil {
				t.Fatal("a failed statfs gave no error")
			}
		}
		if calls != 1 {
			t.Fatalf("%d statfs calls within %v, want 1", calls, diskSpaceEvery)
		}
		now = now.Add(diskSpaceEvery)
		d.DiskSpace()
		if calls != 2 {
			t.Fatalf("%d statfs calls after %v, want 2", calls, diskSpaceEvery)
		}
	})
}
