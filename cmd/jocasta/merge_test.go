package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/projections"
)

// TestMergeThroughServe merges two devices through a running serve, then
// checks that the merge survives a restart and that jocasta replay
// rebuilds the same answers, and unmerges.
func TestMergeThroughServe(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, noSweeps)
	now := time.Now().UTC().Truncate(time.Second)
	phone := hostSpec{"10.9.0.21", "3c:22:fb:00:00:01", "phone.lab"}
	random := hostSpec{"10.9.0.22", "02:42:ac:00:00:02", ""}
	seed(t, cfgPath, sweepAt(now.Add(-time.Hour), phone, random))
	d := startDaemon(t, cfgPath)
	code, out, _ := cli(t, "", "token", "create", "--config", cfgPath, "--name", "merger", "--mode", "read_write", "--expires", "never")
	if code != 0 {
		t.Fatal("token create failed")
	}
	tok := lastLine(out)
	ids := map[string]string{}
	code, body := d.do(t, "GET", "/api/devices", tok, "", "")
	var page projections.Page[projections.Device]
	if code != 200 || json.Unmarshal(body, &page) != nil || len(page.Items) != 2 {
		t.Fatalf("devices: %d %s", code, body)
	}
	for _, dev := range page.Items {
		ids[dev.Addresses[0].IP] = dev.ID
	}
	a, b := ids[phone.ip], ids[random.ip]
	if code, body := d.do(t, "POST", "/api/devices/"+a+"/merge", tok, "application/json", `{"device":"`+b+`"}`); code != 200 || !strings.Contains(string(body), random.ip) {
		t.Fatalf("merge: %d %s", code, body)
	}
	if code, body := d.do(t, "GET", "/api/devices/"+b, tok, "", ""); code != 404 || !strings.Contains(string(body), `"merged_into":"`+a+`"`) {
		t.Fatalf("GET merged: %d %s", code, body)
	}
	if code, body := d.do(t, "GET", "/api/events?kind=device.merged", tok, "", ""); code != 200 || !strings.Contains(string(body), `"actor":"merger (`) {
		t.Fatalf("merge entry: %d %s", code, body)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := snapshotAPI(t, cfg, tok)
	if n := deviceCount(t, live); n != 1 {
		t.Fatalf("%d devices listed while merged, want 1", n)
	}
	replayed := filepath.Join(dir, "replayed.db")
	if code, out, stderr := cli(t, "", "replay", "--config", cfgPath, "--output", replayed); code != 0 {
		t.Fatalf("replay: %s %s", out, stderr)
	}
	rcfg := *cfg
	rcfg.DB.Path, rcfg.DB.Name = dir, "replayed.db"
	if diff := cmp.Diff(live, snapshotAPI(t, &rcfg, tok)); diff != "" {
		t.Fatalf("replayed API differs from live (-live +replayed):\n%s", diff)
	}

	// After a restart the merge holds, and unmerging gives both back.
	d = startDaemon(t, cfgPath)
	if code, body := d.do(t, "GET", "/api/devices/"+b, tok, "", ""); code != 404 {
		t.Fatalf("GET merged after restart: %d %s", code, body)
	}
	if code, body := d.do(t, "POST", "/api/devices/"+a+"/unmerge", tok, "application/json", `{"device":"`+b+`"}`); code != 200 || strings.Contains(string(body), random.ip) {
		t.Fatalf("unmerge: %d %s", code, body)
	}
	if code, body := d.do(t, "GET", "/api/devices/"+b, tok, "", ""); code != 200 || !strings.Contains(string(body), random.ip) {
		t.Fatalf("GET after unmerge: %d %s", code, body)
	}
}
