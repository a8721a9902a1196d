package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources"
)

// TestNoOpEditsAppendNothing: an edit or a watch that changes nothing is
// answered 200 with the device and appends no event, so a token repeating
// one PATCH cannot grow the log. A real change still appends one, with
// the token (name and id) as actor.
func TestNoOpEditsAppendNothing(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	now := time.Now().UTC().Truncate(time.Second)
	seed(t, cfgPath, sweepAt(now.Add(-time.Minute), hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}))
	d := startDaemon(t, cfgPath)
	code, out, _ := cli(t, "", "token", "create", "--config", cfgPath, "--name", "ansible", "--mode", "read_write", "--expires", "never", "--json")
	if code != 0 {
		t.Fatal("token create failed")
	}
	var created struct {
		Secret string
		Token  struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Token.ID == "" {
		t.Fatalf("token create --json: %v %s", err, out)
	}
	_, body := d.do(t, "GET", "/api/devices", created.Secret, "", "")
	var page projections.Page[projections.Device]
	if err := json.Unmarshal(body, &page); err != nil || len(page.Items) != 1 {
		t.Fatalf("devices: %s", body)
	}
	id := page.Items[0].ID
	changes := func(kind string) []projections.ChangeEntry {
		t.Helper()
		code, body := d.do(t, "GET", "/api/events?device="+id+"&kind="+kind, created.Secret, "", "")
		var p projections.Page[projections.ChangeEntry]
		if code != 200 || json.Unmarshal(body, &p) != nil {
			t.Fatalf("events: %d %s", code, body)
		}
		return p.Items
	}
	// events counts the log events behind the change-log entries of a
	// kind (one edit of two fields is one event and two entries).
	events := func(kind string) int {
		t.Helper()
		seqs := map[uint64]bool{}
		for _, c := range changes(kind) {
			seqs[c.Seq] = true
		}
		return len(seqs)
	}
	notes := strings.Repeat("n", 4000)
	edit := fmt.Sprintf(`{"label":"printer","notes":%q,"ignored":false}`, notes)
	for i := range 5 {
		if code, body := d.do(t, "PATCH", "/api/devices/"+id, created.Secret, "application/json", edit); code != 200 || !strings.Contains(string(body), `"label":"printer"`) {
			t.Fatalf("edit %d: %d %s", i, code, body)
		}
	}
	if n := events("device.edited"); n != 1 {
		t.Fatalf("%d device.edited events after one edit sent five times, want 1", n)
	}
	// Clearing a field that is already empty changes nothing either.
	if code, body := d.do(t, "PATCH", "/api/devices/"+id, created.Secret, "application/merge-patch+json", `{"group":null}`); code != 200 {
		t.Fatalf("clear: %d %s", code, body)
	}
	if n := events("device.edited"); n != 1 {
		t.Fatalf("%d device.edited events after clearing an empty field, want 1", n)
	}
	if code, body := d.do(t, "PATCH", "/api/devices/"+id, created.Secret, "application/json", `{"label":"laser printer"}`); code != 200 {
		t.Fatalf("second edit: %d %s", code, body)
	}
	if n := events("device.edited"); n != 2 {
		t.Fatalf("%d device.edited events after a real change, want 2", n)
	}
	edits := changes("device.edited")
	if want := "ansible (" + created.Token.ID + ")"; edits[0].Actor != want {
		t.Fatalf("actor %q, want %q", edits[0].Actor, want)
	}
	for range 3 {
		if code, body := d.do(t, "PATCH", "/api/devices/"+id+"/watch", created.Secret, "application/json", `{"watched":true}`); code != 200 {
			t.Fatalf("watch: %d %s", code, body)
		}
	}
	if n := events("device.watch_started"); n != 1 {
		t.Fatalf("%d watch_started entries after watching three times, want 1", n)
	}
}

// TestTokenNames: names are checked with the token-name rules and are
// unique even when two creations race.
func TestTokenNames(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	startDaemon(t, cfgPath)
	for _, bad := range []string{"bell\x07", "new\nline", "abc\u202egnp", "  "} {
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfgPath, "--name", bad, "--mode", "read", "--expires", "never"); code != exitUser || !strings.Contains(stderr, "token name") {
			t.Errorf("name %q: exit %d %q, want a refusal", bad, code, stderr)
		}
	}
	const racers = 8
	var wg sync.WaitGroup
	codes := make([]int, racers)
	for i := range racers {
		wg.Go(func() {
			codes[i], _, _ = cli(t, "", "token", "create", "--config", cfgPath, "--name", "shared", "--mode", "read", "--expires", "never")
		})
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 0 {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent creations of one name succeeded, want exactly 1", ok, racers)
	}
	_, out, _ := cli(t, "", "token", "list", "--config", cfgPath)
	if n := strings.Count(out, " shared "); n != 1 {
		t.Fatalf("%d tokens named shared listed:\n%s", n, out)
	}
}

// TestAdminCommandsNeverInventADatabase: commands that read or change
// what is there refuse a missing or empty database instead of creating
// one and calling it intact; log commands open read-only.
func TestAdminCommandsNeverInventADatabase(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps) // db.path <dir>/data does not exist yet
	dbFile := filepath.Join(dir, "data", "jocasta.db")
	for _, args := range [][]string{
		{"log", "verify"}, {"log", "export"}, {"token", "list"}, {"user", "list"}, {"token", "revoke", "tok_x"},
	} {
		code, _, stderr := cli(t, "", append(args, "--config", cfg)...)
		if code != exitUser || !strings.Contains(stderr, "no database at "+dbFile) {
			t.Errorf("%v on a missing database: exit %d %q", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created the database directory", args)
		}
	}
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	os.WriteFile(dbFile, nil, 0o600)
	for _, args := range [][]string{{"log", "verify"}, {"token", "list"}} {
		code, _, stderr := cli(t, "", append(args, "--config", cfg)...)
		if code != exitUser || !strings.Contains(stderr, "not a jocasta database") {
			t.Errorf("%v on a 0-byte file: exit %d %q", args, code, stderr)
		}
	}
	if info, _ := os.Stat(dbFile); info.Size() != 0 {
		t.Fatal("an admin command wrote into the 0-byte file")
	}
	// Setting up is allowed to create: the first account before serve. It
	// says so (a mistyped db.path shows at once), and only the first time.
	os.Remove(dbFile)
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "first", "--mode", "read", "--expires", "never"); code != 0 || !strings.Contains(stderr, "no database at "+dbFile+" (db.path, db.name): created a new one") {
		t.Fatalf("token create on a fresh install: exit %d %q", code, stderr)
	}
	if code, _, stderr := cli(t, "pw-long-enough-1\n", "user", "add", "ann", "--password-stdin", "--config", cfg); code != 0 || strings.Contains(stderr, "created") {
		t.Fatalf("user add on the existing database: exit %d %q", code, stderr)
	}
	// Read-only: verify works on a file this process may not write.
	os.Chmod(dbFile, 0o400)
	if code, out, stderr := cli(t, "", "log", "verify", "--config", cfg); code != 0 || !strings.Contains(out, "intact") {
		t.Fatalf("verify of a read-only file: %d %q %q", code, out, stderr)
	}
}

// TestLogCommandsRedactSecrets: log export and log tail show no token or
// password hash unless --include-secrets asks for them (for a backup),
// whether serve runs or not.
func TestLogCommandsRedactSecrets(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfgPath, "--name", "a", "--mode", "read", "--expires", "never"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := cli(t, "pw-long-enough-1\n", "user", "add", "ann", "--password-stdin", "--config", cfgPath); code != 0 {
		t.Fatal(stderr)
	}
	check := func(where string) {
		t.Helper()
		_, out, _ := cli(t, "", "log", "export", "--config", cfgPath)
		if strings.Contains(out, "$argon2id") || !strings.Contains(out, `"secret_sha256":"[redacted]"`) || !strings.Contains(out, `"password_hash":"[redacted]"`) {
			t.Errorf("%s: log export shows credentials or no redaction:\n%s", where, out)
		}
		_, out, _ = cli(t, "", "log", "export", "--include-secrets", "--config", cfgPath)
		if !strings.Contains(out, "$argon2id") || strings.Contains(out, "[redacted]") {
			t.Errorf("%s: log export --include-secrets lacks the hashes:\n%s", where, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var tail lockedBuffer
		cfg, _ := config.Load(cfgPath, nil)
		followLog(ctx, cfg, 1, false, &tail)
		if strings.Contains(tail.String(), "$argon2id") || !strings.Contains(tail.String(), `"password_hash":"[redacted]"`) {
			t.Errorf("%s: log tail shows credentials:\n%s", where, tail.String())
		}
	}
	check("offline")
	startDaemon(t, cfgPath)
	check("through serve")
}

// TestFailedRunInScanLog: a run that produced nothing is in the scan log
// as an incomplete scan with its reason, and /api/scans answers it as
// the OpenAPI document says.
func TestFailedRunInScanLog(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	c, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(c, openCreate)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	e, err := ingest.ScanFailedEvent(sources.Run{
		Instance: sources.Instance{Source: "sweep:lab", Kind: "sweep"},
		Started:  start, Finished: start.Add(2 * time.Second),
		Err: errors.New("icmp: no ICMP socket: allow ping sockets or give CAP_NET_RAW"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d := startDaemon(t, cfgPath)
	_, out, _ := cli(t, "", "token", "create", "--config", cfgPath, "--name", "r", "--mode", "read", "--expires", "never")
	code, body := d.do(t, "GET", "/api/scans", lastLine(out), "", "")
	var page projections.Page[projections.Scan]
	if code != 200 || json.Unmarshal(body, &page) != nil || len(page.Items) != 1 {
		t.Fatalf("scans: %d %s", code, body)
	}
	s := page.Items[0]
	if s.Complete || s.Kind != "devices" || s.Source != "sweep:lab" || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "no ICMP socket") {
		t.Fatalf("scan %+v", s)
	}
}
