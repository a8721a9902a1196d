package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// WriteBackup writes a consistent copy of the whole database file (the
// log, its snapshots and every projection, as one read transaction sees
// them) to w. size is called first with the number of bytes that follow,
// so a reader on the other side of a socket can tell a whole copy from a
// cut one. Appends go on meanwhile; the copy holds what was committed
// when it began.
func (s *Store) WriteBackup(w io.Writer, size func(n int64) error) error {
	if s.isClosed() {
		return fmt.Errorf("store: backup: %w", ErrClosed)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if size != nil {
			if err := size(tx.Size()); err != nil {
				return err
			}
		}
		_, err := tx.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// CheckFile opens the database file at path read-only and verifies its
// whole chain: the check a backup gets after it is written and before a
// restore puts it in place. A file that is not a jocasta database, or
// whose chain does not verify, is an error that says which.
func CheckFile(ctx context.Context, path string) (VerifyReport, error) {
	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		return VerifyReport{}, err
	}
	defer st.Close()
	rep, err := st.Verify(ctx, nil)
	if err != nil {
		return rep, err
	}
	if !rep.OK {
		return rep, fmt.Errorf("store: %s does not verify: event %d: %s: %w", path, rep.FirstBad, rep.Reason, ErrCorrupt)
	}
	return rep, nil
}

// WriteFileAtomic writes a file at path through a temporary file in the
// same directory (mode 0600), synced and renamed into place only once
// write returned without error and check accepted it, so that path never
// holds a half-written file. An existing path is replaced only when
// replace is set. write gets the temporary file; check (optional) gets
// its path after it is synced and closed.
func WriteFileAtomic(path string, replace bool, write func(f *os.File) error, check func(tmp string) error) (err error) {
	if !replace {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists: %w", path, os.ErrExist)
		}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if check != nil {
		if err := check(tmp); err != nil {
			return err
		}
	}
	if !replace {
		// Link fails if path appeared meanwhile; rename would replace it.
		if err := os.Link(tmp, path); err != nil {
			return err
		}
		os.Remove(tmp)
	} else if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, derr := os.Open(dir)
	if derr != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
