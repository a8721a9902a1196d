package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

// A database written by the previous release (testdata/upgrade) opens with
// this build: its chain verifies, the projections whose version changed
// rebuild from the log (said in the log), and the devices, edits, tokens
// and accounts are all there.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(filepath.Join("testdata", "upgrade", "dbc5bbf.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(data, "jocasta.db"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	secret, err := os.ReadFile(filepath.Join("testdata", "upgrade", "dbc5bbf.token"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(secret))
	cfg := writeConfig(t, dir, noSweeps)

	if code, out, stderr := cli(t, "", "log", "verify", "--config", cfg); code != 0 || !strings.Contains(out, "18 events") {
		t.Fatalf("verify of the old database: %q %q", out, stderr)
	}
	d := startDaemon(t, cfg)
	if !strings.Contains(d.log.String(), "projection version changed: rebuilding it from the log") ||
		!strings.Contains(d.log.String(), `"projection":"inventory"`) {
		t.Errorf("the inventory's rebuild is not in the log:\n%s", d.log)
	}
	code, body := d.do(t, "GET", "/api/devices?limit=100&sort=ip", tok, "", "")
	if code != 200 {
		t.Fatalf("devices with the old token: %d %s", code, body)
	}
	var page projections.Page[projections.Device]
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, dev := range page.Items {
		label := ""
		if dev.Label != nil {
			label = *dev.Label
		}
		got = append(got, dev.Name+"|"+*dev.MAC+"|"+label+"|"+strings.Join(dev.Sources, ","))
	}
	if len(page.Items) != 3 {
		t.Fatalf("devices: %v", got)
	}
	printer := page.Items[1]
	if printer.Label == nil || *printer.Label != "Office printer" || printer.Group == nil || *printer.Group != "office" || !printer.Watched ||
		len(printer.Ports) != 2 || len(printer.Services) != 1 || printer.Names["mdns"].Name != "printer.local" {
		t.Errorf("printer after the upgrade: %+v", printer)
	}
	if page.Items[0].Names["dns"].Name != "gw.lab" || page.Items[2].Names["netbios"].Name != "LAPTOP" {
		t.Errorf("names after the upgrade: %v", got)
	}
	_, users, _ := cli(t, "", "user", "list", "--config", cfg)
	if !strings.Contains(users, "admin") {
		t.Errorf("accounts after the upgrade: %q", users)
	}

	// A replay of the old log (and of what serve appended since) builds
	// the same devices.
	d.stop()
	replayed := filepath.Join(dir, "replayed.db")
	if code, out, stderr := cli(t, "", "replay", "--config", cfg, "--output", replayed); code != 0 {
		t.Fatalf("replay of the upgraded database: %s %s", out, stderr)
	}
	rdir := t.TempDir()
	if err := os.Mkdir(filepath.Join(rdir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(replayed, filepath.Join(rdir, "data", "jocasta.db")); err != nil {
		t.Fatal(err)
	}
	rcfg := writeConfig(t, rdir, noSweeps)
	if code, out, stderr := cli(t, "", "log", "verify", "--config", rcfg); code != 0 {
		t.Fatalf("verify of the replayed database: %s %s", out, stderr)
	}
	r := startDaemon(t, rcfg)
	code, rbody := r.do(t, "GET", "/api/devices?limit=100&sort=ip", tok, "", "")
	if code != 200 || string(rbody) != string(body) {
		t.Errorf("devices after the replay differ:\n%s\nwant\n%s", rbody, body)
	}
}
