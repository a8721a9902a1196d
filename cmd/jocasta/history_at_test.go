package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections/history"
)

// at= and /api/diff through serve, over the day of flapLog: the phone,
// last seen at 01:40, goes offline at 01:55:02 (15-minute window, the
// clock's 2 s) and is back at 02:05.
func TestHistoryAtThroughServe(t *testing.T) {
	cfg, _, t0 := flapDB(t, "")
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "history", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	d := startDaemon(t, cfg)
	at := func(h, m int) string {
		return url.QueryEscape(t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute).Format(time.RFC3339))
	}
	get := func(path string, want int, v any) {
		t.Helper()
		code, body := d.do(t, "GET", path, tok, "", "")
		if code != want {
			t.Fatalf("GET %s: %d %s, want %d", path, code, body, want)
		}
		if v != nil {
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("GET %s: %v: %s", path, err, body)
			}
		}
	}
	var page struct {
		Items []history.Device `json:"items"`
	}
	get("/api/devices?at="+at(1, 50), 200, &page)
	presence := map[string]string{}
	var phone string
	for _, dv := range page.Items {
		presence[dv.Name] = dv.Presence
		if dv.Name == "phone.lab" {
			phone = dv.ID
		}
	}
	if len(page.Items) != 3 || presence["phone.lab"] != "online" || presence["printer.lab"] != "online" || presence["laptop.lab"] != "online" {
		t.Fatalf("at 01:50: %+v", page.Items)
	}
	var one history.Device
	get("/api/devices/"+phone+"?at="+at(2, 0), 200, &one)
	if one.Presence != "offline" || one.Name != "phone.lab" {
		t.Fatalf("the phone at 02:00: %+v", one)
	}
	var diff history.Diff
	get("/api/diff?from="+at(1, 50)+"&to="+at(2, 0), 200, &diff)
	if len(diff.Added) != 0 || len(diff.Removed) != 0 || len(diff.Changed) != 1 || diff.Changed[0].ID != phone ||
		len(diff.Changed[0].Fields) != 1 || diff.Changed[0].Fields["presence"] != (history.FieldChange{From: "online", To: "offline"}) {
		t.Fatalf("diff 01:50..02:00: %+v", diff)
	}
	var st history.Stats
	get("/api/stats?at="+at(2, 0), 200, &st)
	if st.Devices != 3 || st.ByPresence["offline"] != 1 || st.ByPresence["online"] != 2 {
		t.Fatalf("stats at 02:00: %+v", st)
	}
	get("/api/devices?at="+at(-1, 0), 200, &page)
	if len(page.Items) != 0 {
		t.Fatalf("before the first event: %+v", page.Items)
	}
	get("/api/devices/"+phone+"?at="+at(-1, 0), 404, nil)
	get("/api/diff?from="+at(2, 0)+"&to="+at(1, 0), 400, nil)
}

// TestPresenceRulesRecorded: serve records the presence rules in the log
// as it starts when they differ from the last recorded (or none are), and
// a replay under another configuration applies the recorded ones.
func TestPresenceRulesRecorded(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps)
	rulesEvents := func() int {
		t.Helper()
		code, out, stderr := cli(t, "", "log", "stats", "--json", "--config", cfg)
		if code != 0 {
			t.Fatalf("log stats: %s", stderr)
		}
		var st struct {
			Kinds []struct {
				Kind   string `json:"kind"`
				Events int    `json:"events"`
			} `json:"kinds"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		for _, k := range st.Kinds {
			if k.Kind == "inventory.rules_set" {
				return k.Events
			}
		}
		return 0
	}
	// serve appends the event once caught up: wait for it, then stop.
	runUntil := func(want int) {
		t.Helper()
		d := startDaemon(t, cfg)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			code, out, _ := cli(t, "", "log", "export", "--config", cfg)
			if code == 0 && strings.Count(out, `"inventory.rules_set"`) == want || time.Now().After(deadline) {
				break
			}
		}
		d.stop()
		if n := rulesEvents(); n != want {
			t.Fatalf("%d inventory.rules_set events in the log, want %d", n, want)
		}
	}
	runUntil(1) // nothing recorded yet: the configured rules (15m, 6h)
	runUntil(1) // the same rules: nothing more
	writeConfig(t, dir, noSweeps+"inventory:\n  online_window: 30m\n  address_grace: 0s\n")
	runUntil(2)
	code, out, stderr := cli(t, "", "log", "export", "--config", cfg)
	if code != 0 || !strings.Contains(out, `"online_window_s":1800`) || !strings.Contains(out, `"address_grace_s":0`) {
		t.Errorf("log export: %d %s %s", code, out, stderr)
	}
}
