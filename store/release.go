package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ReleaseMapped drops the database file's pages from this process's
// memory map (madvise MADV_DONTNEED on bbolt's read-only shared mapping)
// and returns how many bytes of the file the mapping covered.
//
// bbolt reads the file through that mapping, so every page a load, a
// write transaction or an API read touched stays in the process's
// resident set (RssFile) until the kernel wants the memory back: with a
// 100 MB database, 100 MB of the process's RSS are the file's pages. They
// are page cache, not the process's own memory. Dropping them from the
// mapping leaves them in the page cache (a later read maps them again
// with a minor fault, no I/O) and keeps the resident set to what the
// process itself holds. Nothing is lost: the mapping is read-only, and
// bbolt writes the file with pwrite, never through it.
//
// It runs inside a read transaction, which holds bbolt's mmap lock: the
// mapping cannot be moved (remapped when the file grows) while the pages
// are released.
func (s *Store) ReleaseMapped() (int64, error) {
	var size int64
	err := s.db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		if err := ReleaseMappedTx(tx); err != nil {
			return fmt.Errorf("store: release the mapped pages of %s: %w", s.path, err)
		}
		return nil
	})
	return size, err
}

// ReleaseMappedTx is ReleaseMapped inside a transaction the caller
// holds, for work that reads more of the file than it needs mapped at
// once: it releases every page mapped so far, those the work has yet to
// use included (they are read again from the page cache). The mapping
// cannot move meanwhile: a read transaction holds bbolt's mmap lock, and
// in a write transaction's function only that transaction's own commit,
// still to come, could remap. Calling ReleaseMapped there instead would
// open a second read transaction, which can deadlock with a writer
// waiting to remap.
func ReleaseMappedTx(tx *bolt.Tx) error {
	size := tx.Size() // the file's pages in use; the mapping is at least as large
	if size <= 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, tx.DB().Info().Data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("madvise: %w", errno)
	}
	return nil
}

// largeValue is the size from which a value is stored out of line
// (logvalue.go), and reading one from the log releases the map once
// done: a flow window's event, up to megabytes of parts that the kernel
// would otherwise keep mapped in the process until the next release
// (with the large folios of recent kernels' page cache, a read maps up
// to 2 MiB around what it touches, so the whole map is released rather
// than the value's pages).
const largeValue = 256 << 10
