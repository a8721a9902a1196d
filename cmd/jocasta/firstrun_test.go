package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// A first token needs only a name: read only, never expiring (the
// contract: a token expires only when an expiry is chosen), and the
// command says what it chose (on stderr: stdout stays the token).
func TestTokenCreateDefaults(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "first")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !tokenRE.MatchString(lastLine(out)) {
		t.Fatalf("last line of stdout is not the token: %q", out)
	}
	if !strings.Contains(stderr, "read only") || !strings.Contains(stderr, "never expires") {
		t.Errorf("the choices are not said: %q", stderr)
	}
	_, out, _ = cli(t, "", "token", "list", "--config", cfg, "--json")
	var toks []projections.Token
	if json.Unmarshal([]byte(out), &toks) != nil || len(toks) != 1 {
		t.Fatalf("token list: %q", out)
	}
	tok := toks[0]
	if tok.Mode != "read" || tok.ExpiresAt != nil {
		t.Errorf("token %+v", tok)
	}
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfg); code != exitUsage || !strings.Contains(stderr, "--name") {
		t.Errorf("without a name: %d %q", code, stderr)
	}
}

// jocasta health answers 0 while serve is up, 1 when nothing answers.
func TestHealthCommand(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	d := startDaemon(t, cfg)
	if code, out, stderr := cli(t, "", "health", "--url", d.base+"/api/livez"); code != 0 || !strings.Contains(out, `"status":"ok"`) {
		t.Fatalf("health of a running serve: %d %q %q", code, out, stderr)
	}
	d.stop()
	if code, _, stderr := cli(t, "", "health", "--url", d.base+"/api/livez"); code != 1 || stderr == "" {
		t.Fatalf("health of a stopped serve: %d %q", code, stderr)
	}
}

// A first start says where to go: the URL, the setup link for the first
// account, and the command for a first API token; once a token and an
// account exist, only the URL.
func TestFirstRunReadyLine(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	d := startDaemon(t, cfg)
	if !eventually(10*time.Second, func() bool { return strings.Contains(d.log.String(), "setup_link") }) {
		t.Fatalf("no setup link:\n%s", d.log)
	}
	logs := d.log.String()
	for _, want := range []string{`"url":"` + d.base + `/"`, `"first_api_token":"jocasta token create --name NAME"`, `"setup_link":"` + d.base + `/setup?token=`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the first start's log lacks %s:\n%s", want, logs)
		}
	}
	d.stop()
	cli(t, "", "token", "create", "--config", cfg, "--name", "first")
	cli(t, "pw-long-enough-1\n", "user", "add", "ann", "--password-stdin", "--config", cfg)
	d = startDaemon(t, cfg)
	if !eventually(10*time.Second, func() bool { return strings.Contains(d.log.String(), "ready: the web interface") }) {
		t.Fatalf("no ready line:\n%s", d.log)
	}
	time.Sleep(100 * time.Millisecond)
	if logs := d.log.String(); strings.Contains(logs, "first_api_token") || strings.Contains(logs, "setup_link") {
		t.Errorf("a second start repeats the first-run hints:\n%s", logs)
	}
}

// An operator's country database that does not load stops serve at
// start with its key, instead of peers silently without countries.
func TestCountryDBThatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "country.mmdb")
	os.WriteFile(bad, []byte("not a maxmind database"), 0o600)
	cfg := writeConfig(t, dir, noSweeps+"location:\n  country_db: "+bad+"\n")
	code, _, stderr := cli(t, "", "serve", "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "location.country_db "+bad) {
		t.Fatalf("serve with a bad country database: exit %d %q", code, stderr)
	}
}
