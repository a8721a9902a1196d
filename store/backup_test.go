package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

// A backup taken while appends go on is a whole, verifying database with
// every event committed before it began.
func TestBackupDuringAppends(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "live.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	appendN := func(n int) {
		for i := range n {
			ev := events.MustNew(events.KindClockTicked, events.ClockTicked{At: time.Unix(int64(i), 0).UTC()}, time.Now())
			if _, err := st.Append(ctx, ev); err != nil {
				t.Error(err)
				return
			}
		}
	}
	appendN(200)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); appendN(500) }()
	before := st.Head()
	out := filepath.Join(dir, "backup.db")
	var size int64
	err = store.WriteFileAtomic(out, false, func(f *os.File) error {
		return st.WriteBackup(f, func(n int64) error { size = n; return nil })
	}, func(tmp string) error { _, err := store.CheckFile(ctx, tmp); return err })
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(out)
	if info.Size() != size || info.Mode().Perm() != 0o600 {
		t.Errorf("backup is %d bytes mode %v, announced %d", info.Size(), info.Mode().Perm(), size)
	}
	rep, err := store.CheckFile(ctx, out)
	if err != nil || rep.Head < before || rep.Head > st.Head() {
		t.Fatalf("backup head %d (live %d..%d): %v", rep.Head, before, st.Head(), err)
	}
	// Never over an existing file without replace.
	if err := store.WriteFileAtomic(out, false, func(*os.File) error { return nil }, nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("overwrote: %v", err)
	}
	// A failed write leaves nothing behind.
	bad := filepath.Join(dir, "cut.db")
	if err := store.WriteFileAtomic(bad, false, func(f *os.File) error { f.WriteString("half"); return errors.New("cut") }, nil); err == nil {
		t.Error("no error")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "cut") || strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestCheckFileRefusesGarbage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.db")
	os.WriteFile(p, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	if _, err := store.CheckFile(context.Background(), p); err == nil {
		t.Fatal("garbage accepted")
	}
}
