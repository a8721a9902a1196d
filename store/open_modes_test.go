package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

func TestOpenNeverCreatesWhenTold(t *testing.T) {
	for _, opts := range []store.Options{{MustExist: true}, {ReadOnly: true}} {
		dir := t.TempDir()
		missing := filepath.Join(dir, "typo", "jocasta.db")
		if _, err := store.Open(missing, opts); !errors.Is(err, store.ErrNoDatabase) {
			t.Fatalf("%+v: open of a missing file: %v, want ErrNoDatabase", opts, err)
		}
		if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%+v: the open created %s", opts, filepath.Dir(missing))
		}
		empty := filepath.Join(dir, "empty.db")
		os.WriteFile(empty, nil, 0o600)
		if _, err := store.Open(empty, opts); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%+v: open of a 0-byte file: %v, want ErrCorrupt", opts, err)
		}
		if info, _ := os.Stat(empty); info.Size() != 0 {
			t.Fatalf("%+v: the 0-byte file was written", opts)
		}
	}
}

func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
	e.Source = "clock"
	if _, err := s.Append(context.Background(), e, e); err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Chmod(path, 0o400) // a read-only open must not need, or change, write access
	before, _ := os.Stat(path)

	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	if rep, err := ro.Verify(context.Background(), nil); err != nil || !rep.OK || rep.Head != 2 {
		t.Fatalf("verify read-only: %+v %v", rep, err)
	}
	if _, err := ro.Append(context.Background(), e); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("append to a read-only store: %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Fatalf("a read-only open changed the file: %v %v → %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
	}
}
