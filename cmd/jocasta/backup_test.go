package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A backup taken over the control socket during a burst of writes is a
// whole database that verifies; restored in place of another database,
// it holds the same events as the live one up to the copy's head.
func TestBackupWhileServingAndRestore(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps)
	d := startDaemon(t, cfg)
	backup := filepath.Join(dir, "backup.db")
	for n := range 3 {
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", fmt.Sprintf("before-%d", n), "--mode", "read", "--expires", "never"); code != 0 {
			t.Fatal(stderr)
		}
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", fmt.Sprintf("burst-%d", n), "--mode", "read", "--expires", "never"); code != 0 {
				t.Errorf("token create during the backup: %s", stderr)
				return
			}
		}
	}()
	code, out, stderr := cli(t, "", "backup", "--config", cfg, "--output", backup)
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out, "hash chain verified") {
		t.Fatalf("backup: exit %d %q %q", code, out, stderr)
	}
	if info, err := os.Stat(backup); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", info, err)
	}
	// Never over an existing file without --force.
	if code, _, stderr := cli(t, "", "backup", "--config", cfg, "--output", backup); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("backup over an existing file: exit %d %q", code, stderr)
	}
	// Restore refuses while serve runs.
	if code, _, stderr := cli(t, "", "restore", backup, "--config", cfg, "--force"); code != 1 || !strings.Contains(stderr, "stop it first") {
		t.Errorf("restore while serving: exit %d %q", code, stderr)
	}
	_, live, _ := cli(t, "", "log", "export", "--config", cfg)
	d.stop()
	// Without serve, the command opens the database itself.
	if code, out, stderr := cli(t, "", "backup", "--config", cfg, "--output", filepath.Join(dir, "offline.db")); code != 0 || !strings.Contains(out, "hash chain verified") {
		t.Fatalf("offline backup: exit %d %q %q", code, out, stderr)
	}

	// Restore into another configuration's (empty) place.
	os.Mkdir(filepath.Join(dir, "other"), 0o700)
	other := writeConfig(t, filepath.Join(dir, "other"), noSweeps)
	if code, out, stderr := cli(t, "", "restore", backup, "--config", other); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: exit %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli(t, "", "restore", backup, "--config", other); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("restore over a database without --force: exit %d %q", code, stderr)
	}
	if code, out, stderr := cli(t, "", "log", "verify", "--config", other); code != 0 {
		t.Fatalf("verify of the restored database: %q %q", out, stderr)
	}
	_, restored, _ := cli(t, "", "log", "export", "--config", other)
	if strings.Count(restored, "\n") < 3 || !strings.HasPrefix(live, restored) {
		t.Fatalf("the restored log is not a prefix of the live one:\nrestored %d bytes, live %d bytes", len(restored), len(live))
	}
	// Its projections are whole: the tokens are there.
	_, tokens, _ := cli(t, "", "token", "list", "--config", other)
	if !strings.Contains(tokens, "before-2") {
		t.Errorf("restored tokens:\n%s", tokens)
	}

	// A file that is not a database, or whose chain is broken, is refused.
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("x", 8192)), 0o600)
	if code, _, stderr := cli(t, "", "restore", garbage, "--config", other, "--force"); code != 1 || !strings.Contains(stderr, "cannot be restored") {
		t.Errorf("restore of garbage: exit %d %q", code, stderr)
	}
	if code, _, _ := cli(t, "", "log", "verify", "--config", other); code != 0 {
		t.Error("a refused restore touched the database")
	}
}

// log stats works on the database itself and through a running serve,
// and says the same.
func TestLogStats(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	for n := range 3 {
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", fmt.Sprint("t", n)); code != 0 {
			t.Fatal(stderr)
		}
	}
	code, offline, stderr := cli(t, "", "log", "stats", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(offline, `"events": 3`) || !strings.Contains(offline, `"kind": "token.created"`) {
		t.Fatalf("offline: %d %s %s", code, offline, stderr)
	}
	// Nothing purged: the history shows everything from the oldest event.
	var st struct {
		Oldest      *time.Time `json:"oldest"`
		HistoryFrom *time.Time `json:"history_from"`
	}
	if err := json.Unmarshal([]byte(offline), &st); err != nil || st.Oldest == nil || st.HistoryFrom == nil || !st.HistoryFrom.Equal(*st.Oldest) {
		t.Errorf("offline: oldest %v, history_from %v (%v)", st.Oldest, st.HistoryFrom, err)
	}
	d := startDaemon(t, cfg)
	code, served, stderr := cli(t, "", "log", "stats", "--config", cfg)
	if code != 0 || !strings.Contains(served, "token.created") || !strings.Contains(served, "bucket") ||
		!strings.Contains(served, "history from") || !strings.Contains(served, st.Oldest.UTC().Format(time.RFC3339)) {
		t.Fatalf("through serve: %d %s %s", code, served, stderr)
	}
	d.stop()
}
