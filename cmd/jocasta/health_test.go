package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/store"
)

// readyz polls /api/readyz until its status is want, returning the body.
func readyz(t *testing.T, d *daemon, want int, within time.Duration) []byte {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []byte
	for {
		resp, err := d.client.Get(d.base + "/api/readyz")
		if err == nil {
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			resp.Body.Close()
			last = buf.Bytes()
			if resp.StatusCode == want {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never answered %d within %v; last %s\n%s", want, within, last, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBackgroundVerifyFindsDamage damages one event in the middle of the
// log behind jocasta's back; serve's background verify must find it, log
// it and make readyz answer 503 naming the seq.
func TestBackgroundVerifyFindsDamage(t *testing.T) {
	cfg := tamperedLog(t)
	testHooks = &serveHooks{verifyFirst: 10 * time.Millisecond}
	d := launchDaemon(t, cfg)
	testHooks = nil
	body := readyz(t, d, http.StatusServiceUnavailable, 30*time.Second)
	var p struct{ Detail string }
	json.Unmarshal(body, &p)
	if !strings.Contains(p.Detail, "damaged at seq 2") {
		t.Fatalf("readyz detail %q, want the damaged seq", p.Detail)
	}
	if !strings.Contains(d.log.String(), "the event log is damaged") {
		t.Fatalf("the damage was not logged:\n%s", d.log)
	}
}

// TestServeExitsWhenTheDatabaseFails runs serve with its database on a
// small tmpfs, fills the disk, and sends a write: the write is answered
// as failed with an unknown outcome, readyz turns 503 and serve stops
// with an error for its supervisor to restart it.
func TestServeExitsWhenTheDatabaseFails(t *testing.T) {
	if os.Geteuid() != 0 {
		if inCI() {
			t.Fatal("CI must run this test as root: it mounts a small tmpfs")
		}
		t.Skip("SKIPPED LOUDLY: mounting a tmpfs needs root; run as root to test a failing disk")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "data")
	os.MkdirAll(mnt, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	cfg := writeConfig(t, dir, noSweeps)
	d := startDaemon(t, cfg)
	// Fill what is left of the disk.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Close()
	// Writes through the control socket until one fails.
	var failed string
	for i := range 2000 {
		code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "t"+strings.Repeat("x", 40)+string(rune('a'+i%26))+strings.Repeat("y", i%10),
			"--mode", "read", "--expires", "never")
		if code != 0 {
			failed = stderr
			break
		}
	}
	if failed == "" {
		t.Fatal("no write failed on a full disk")
	}
	if !strings.Contains(failed, "unknown") {
		t.Fatalf("the failed write said %q; it must say its outcome is unknown", failed)
	}
	select {
	case <-d.exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still runs 10 s after its database failed\n%s", d.log)
	}
	if err := d.result(); err == nil || !strings.Contains(err.Error(), "database failed") {
		t.Fatalf("serve returned %v, want the database failure; cli said %q\n%s", err, failed, d.log)
	}
	if !errors.Is(d.result(), store.ErrOutcomeUnknown) && !strings.Contains(d.log.String(), "outcome of that write is unknown") {
		t.Fatalf("the log does not say why serve stopped:\n%s", d.log)
	}
}

// TestStopCause: whichever part stops serve first on a failed database
// (watchStore, or the notification ledger's commit on the same full
// disk), serve reports the database's failure, with the outcome unknown.
func TestStopCause(t *testing.T) {
	enospc := errors.New("write jocasta.db: no space left on device")
	ledger := fmt.Errorf("notify: record decisions after seq 2: %w", errors.New("write jocasta.db: no space left on device"))
	other := errors.New("http: listen: address in use")
	for _, tc := range []struct {
		name          string
		err, failed   error
		wantDB        bool
		wantSame      bool
		wantInMessage string
	}{
		{name: "clean stop", wantSame: true},
		{name: "another failure, store fine", err: other, wantSame: true},
		{name: "watchStore first", err: &dbFailedError{cause: enospc}, failed: enospc, wantDB: true, wantSame: true},
		{name: "ledger first", err: ledger, failed: enospc, wantDB: true, wantInMessage: "first stopped: notify: record decisions"},
		{name: "signal, then an append failed", err: context.Canceled, failed: enospc, wantDB: true},
		{name: "nil error, store failed", failed: enospc, wantDB: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stopCause(tc.err, tc.failed)
			if tc.wantSame && got != tc.err {
				t.Fatalf("stopCause changed %v into %v", tc.err, got)
			}
			if !tc.wantDB {
				return
			}
			if got == nil || !strings.Contains(got.Error(), "database failed") || !errors.Is(got, store.ErrOutcomeUnknown) || !errors.Is(got, enospc) {
				t.Fatalf("stopCause = %v, want the database's failure with its outcome unknown and its cause", got)
			}
			if !strings.Contains(got.Error(), tc.wantInMessage) {
				t.Fatalf("stopCause = %q, want it to say %q", got, tc.wantInMessage)
			}
		})
	}
}
