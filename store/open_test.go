package store_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
	bolt "go.etcd.io/bbolt"
)

func TestOpenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "dir")
	path := filepath.Join(dir, "jocasta.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		path string
		want os.FileMode
	}{
		{"file", path, 0o600},
		{"directory", dir, 0o700},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != c.want {
				t.Errorf("mode %v, want %v", got, c.want)
			}
		})
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
}

func TestOpenTightensLooseMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jocasta.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, _ := os.Stat(path)
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v after reopen, want 0600", got)
	}
}

func TestOpenOptionsInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		opts store.Options
		want string
	}{
		{"negative lock timeout", store.Options{LockTimeout: -time.Second}, "lock_timeout"},
		{"negative max batch", store.Options{MaxBatch: -1}, "max_batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := store.Open(filepath.Join(t.TempDir(), "x.db"), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to name %s", err, c.want)
			}
		})
	}
}

func TestReopenKeepsState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jocasta.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := appendN(t, s, 5, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Head() != 5 || s.First() != 1 {
		t.Fatalf("head %d first %d, want 5 and 1", s.Head(), s.First())
	}
	more, err := s.Append(t.Context(), tokenEvent(t, "after-reopen"))
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Seq != 6 || more[0].PrevHash != stored[4].Hash {
		t.Errorf("appended seq %d prev %s, want 6 linked to %s", more[0].Seq, more[0].PrevHash, stored[4].Hash)
	}
}

// TestOpenLocked holds the store open and opens it again from a child
// process (TestMain, JOCASTA_LOCK_CHILD).
func TestOpenLocked(t *testing.T) {
	s := storetest.Open(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JOCASTA_LOCK_CHILD="+s.Path())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v (output %q)", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("child printed %q: want the errors.Is result and a one-line error", out)
	}
	if lines[0] != "true" {
		t.Errorf("errors.Is(err, ErrLocked) = %s in the child", lines[0])
	}
	want := "store: open " + s.Path() + ": database is locked by another process (is jocasta serve running?)"
	if lines[1] != want {
		t.Errorf("error %q\nwant  %q", lines[1], want)
	}
}

// damage describes a way a file can be broken.
type damage struct {
	name  string
	setup func(t *testing.T, path string) // leaves a damaged file at path
	want  string                          // substring of the error
}

func TestOpenDamaged(t *testing.T) {
	cases := []damage{
		{"random bytes", func(t *testing.T, path string) {
			b := make([]byte, 64<<10)
			rand.Read(b)
			writeFile(t, path, b)
		}, "invalid database"},
		{"short garbage", func(t *testing.T, path string) {
			writeFile(t, path, []byte("not a database\n"))
		}, "damaged"},
		{"truncated bbolt file", func(t *testing.T, path string) {
			newLog(t, path, 300)
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var used int64
			db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
			db.Close()
			if err := os.Truncate(path, used/2); err != nil {
				t.Fatal(err)
			}
		}, "truncated"},
		{"truncated to a few pages", func(t *testing.T, path string) {
			newLog(t, path, 300)
			if err := os.Truncate(path, 3*4096); err != nil {
				t.Fatal(err)
			}
		}, "truncated"},
		{"both meta pages zeroed", func(t *testing.T, path string) {
			newLog(t, path, 10)
			b, _ := os.ReadFile(path)
			clear(b[:2*16384]) // both meta pages, whatever the page size up to 16 KiB
			writeFile(t, path, b)
		}, "damaged"},
		{"data pages garbled", func(t *testing.T, path string) {
			newLog(t, path, 300)
			b, _ := os.ReadFile(path)
			rand.Read(b[2*4096:])
			writeFile(t, path, b)
		}, "damaged"},
		{"a bbolt file of someone else", func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("other"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
		}, "not a jocasta database"},
		{"last event deleted", func(t *testing.T, path string) {
			newLog(t, path, 10)
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Delete(key(10)) })
		}, "last key of the log is not head 10"},
		{"head hash in meta altered", func(t *testing.T, path string) {
			newLog(t, path, 10)
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("meta")).Put([]byte("head_hash"), []byte(strings.Repeat("ab", 32)))
			})
		}, "does not match the head hash"},
		{"last event undecodable", func(t *testing.T, path string) {
			newLog(t, path, 10)
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Put(key(10), []byte("{")) })
		}, "head event 10 does not decode"},
		{"store bucket missing", func(t *testing.T, path string) {
			newLog(t, path, 1)
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("checkpoints")) })
		}, `bucket "checkpoints" missing`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "jocasta.db")
			c.setup(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(path, store.Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a damaged file")
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("err = %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("err = %q, want one line naming %s and %q", msg, path, c.want)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("Open changed the damaged file")
			}
		})
	}
}

func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jocasta.db")
	newLog(t, path, 1)
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), key(store.SchemaVersion+1))
	})
	_, err := store.Open(path, store.Options{})
	if !errors.Is(err, store.ErrSchemaVersion) {
		t.Fatalf("err = %v, want ErrSchemaVersion", err)
	}
}

// newLog creates a closed store at path with n events.
func newLog(t *testing.T, path string, n int) {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// envelopeAt reads the stored value at seq from a closed store's file.
func envelopeAt(t *testing.T, path string, seq uint64) (events.Envelope, []byte) {
	t.Helper()
	var raw []byte
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		raw = bytes.Clone(tx.Bucket([]byte("log")).Get(key(seq)))
		return nil
	})
	var e events.Envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e, raw
}
