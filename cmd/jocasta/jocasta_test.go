package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/httpapi/apitest"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
)

const noSweeps = "scan:\n  devices:\n    enabled: false\n"

func TestUsageAndExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no command", nil, exitUsage, "no command given"},
		{"unknown", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"bad flag", []string{"token", "list", "--nope"}, exitUsage, "flag provided but not defined"},
		{"missing arg", []string{"token", "revoke"}, exitUsage, "needs the token ID"},
		{"create without a name", []string{"token", "create", "--mode", "read"}, exitUsage, "--name"},
		{"bad time", []string{"log", "export", "--since", "yesterday"}, exitUsage, "RFC 3339"},
		{"missing config", []string{"config", "check", "--config", "/nonexistent/j.yaml"}, exitUser, "/nonexistent/j.yaml"},
		{"bad mode", []string{"token", "create", "--name", "x", "--mode", "admin", "--expires", "30d"}, exitUsage, `--mode "admin": want read or read_write`},
		{"bad expiry", []string{"token", "create", "--name", "x", "--mode", "read", "--expires", "7d"}, exitUsage, `--expires "7d": want never, 30d, 90d or 1y`},
		{"command usage only", []string{"user", "add"}, exitUsage, "user add NAME [--password-stdin]"},
		{"a notify scope misspelt", []string{"notify", "set", "phone", "device.online@group:lab"}, exitUsage, "all, watched, group=NAME or network=CIDR"},
		{"init into a missing directory", []string{"init", "--output", "/nonexistent/dir/j.yaml"}, exitUser, "does not exist; create it first"},
		{"list-sources with an argument", []string{"list-sources", "x"}, exitUsage, "takes no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Fatalf("exit %d stderr %q; want exit %d containing %q", code, stderr, tc.code, tc.err)
			}
		})
	}
	if code, out, _ := cli(t, "", "help"); code != 0 || !strings.Contains(out, "token create") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, stderr := cli(t, "", "token", "--help"); code != 0 {
		t.Fatalf("token --help: exit %d %q", code, stderr)
	}
	// A command's help and usage errors show its own lines, not every command.
	for _, args := range [][]string{{"token", "create", "--help"}, {"token"}, {"token", "--help"}} {
		code, out, stderr := cli(t, "", args...)
		text := out + stderr
		if !strings.Contains(text, "token create --name N") || !strings.Contains(text, "token revoke ID") || strings.Contains(text, "user add") {
			t.Errorf("%q: exit %d, usage:\n%s", args, code, text)
		}
	}
}

func TestConfigCommands(t *testing.T) {
	dir := t.TempDir()
	good := writeConfig(t, dir, "plugins:\n  dnsfilter2:\n    home:\n      host: 10.0.0.2\n      password: hunter2-secret\n")
	if code, out, stderr := cli(t, "", "config", "check", "--config", good); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("check: %d %q %q", code, out, stderr)
	}
	code, out, _ := cli(t, "", "config", "show", "--config", good)
	if code != 0 || strings.Contains(out, "hunter2-secret") || !strings.Contains(out, "[redacted]") {
		t.Fatalf("show leaked or failed (%d):\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("server:\n  port: 70000\nscan:\n  devices:\n    wait: 1.5h\n"), 0o600)
	code, _, stderr := cli(t, "", "config", "check", "--config", bad)
	if code != exitUser || !strings.Contains(stderr, "bad.yaml:2") || !strings.Contains(stderr, "bad.yaml:5") {
		t.Fatalf("check bad: %d %q", code, stderr)
	}
	// serve refuses the same file before opening anything.
	code, _, stderr = cli(t, "", "serve", "--config", bad)
	if code != exitUser || !strings.Contains(stderr, "server.port") {
		t.Fatalf("serve bad: %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatal("serve with a bad config created the database directory")
	}
}

func TestInitWritesLoadableConfig(t *testing.T) {
	out := filepath.Join(t.TempDir(), "j.yaml")
	code, stdout, stderr := cli(t, "", "init", "--output", out)
	if code != 0 {
		t.Fatalf("init: %d %s %s", code, stdout, stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("init file: %v %v", fi, err)
	}
	if _, err := config.Load(out, nil); err != nil {
		t.Fatalf("starter does not load: %v", err)
	}
	if code, _, stderr := cli(t, "", "init", "--output", out); code != exitUser || !strings.Contains(stderr, "--force") {
		t.Fatalf("init over existing: %d %q", code, stderr)
	}
	// --force over a file others can read leaves it the owner's alone.
	os.Chmod(out, 0o644)
	if code, _, stderr := cli(t, "", "init", "--force", "--output", out); code != 0 {
		t.Fatalf("init --force: %d %q", code, stderr)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Fatalf("init --force left mode %04o, want 0600", fi.Mode().Perm())
	}
}

func TestServeWarnsAboutAReadableConfig(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps+"server:\n  port: "+strconv.Itoa(freePort(t))+"\n")
	if w := configModeWarning(cfg); w != "" {
		t.Fatalf("a 0600 config warned: %s", w)
	}
	os.Chmod(cfg, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg}, []string{}, strings.NewReader(""), io.Discard, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "serving the API") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.Contains(stderr.String(), "other users can read it") || !strings.Contains(stderr.String(), "chmod 600 "+cfg) {
		t.Fatalf("serve did not warn about a 0644 config:\n%s", stderr.String())
	}
}

var tokenRE = regexp.MustCompile(`^jct_[0-9A-Za-z]{43}$`)

// adminScenario runs every admin command against cfg, whether or not serve
// runs, and returns the read_write token it created.
func adminScenario(t *testing.T, cfg string) string {
	t.Helper()
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "scripts", "--mode", "read_write", "--expires", "90d")
	if code != 0 {
		t.Fatalf("token create: %d %s", code, stderr)
	}
	secret := lastLine(out)
	if !tokenRE.MatchString(secret) {
		t.Fatalf("last line %q is not a token", secret)
	}
	code, out, _ = cli(t, "", "token", "create", "--config", cfg, "--name", "ro", "--mode", "read", "--expires", "never", "--json")
	var created struct {
		Token  projections.Token `json:"token"`
		Secret string            `json:"secret"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token.Mode != "read" || created.Token.ExpiresAt != nil {
		t.Fatalf("token create --json: %d %q", code, out)
	}
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "ro", "--mode", "read", "--expires", "never"); code != exitUser || !strings.Contains(stderr, "already exists") {
		t.Fatalf("duplicate name: %d %q", code, stderr)
	}
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "x", "--mode", "admin", "--expires", "never"); code != exitUsage || !strings.Contains(stderr, "read or read_write") {
		t.Fatalf("bad mode: %d %q", code, stderr)
	}
	code, out, _ = cli(t, "", "token", "list", "--config", cfg, "--json")
	var toks []projections.Token
	if code != 0 || json.Unmarshal([]byte(out), &toks) != nil || len(toks) != 2 {
		t.Fatalf("token list: %d %q", code, out)
	}
	if strings.Contains(out, secret) || strings.Contains(out, created.Secret) {
		t.Fatal("token list shows a secret")
	}
	if code, _, _ := cli(t, "", "token", "revoke", "--config", cfg, created.Token.ID); code != 0 {
		t.Fatal("revoke failed")
	}
	if code, _, stderr := cli(t, "", "token", "revoke", "--config", cfg, created.Token.ID); code != exitUser || !strings.Contains(stderr, "no token") {
		t.Fatalf("second revoke: %d %q", code, stderr)
	}
	code, out, _ = cli(t, "", "token", "list", "--config", cfg)
	if code != 0 || strings.Contains(out, created.Token.ID) || !strings.Contains(out, "scripts") {
		t.Fatalf("list after revoke:\n%s", out)
	}

	if code, _, stderr := cli(t, "correct horse battery\n", "user", "add", "--config", cfg, "alice", "--password-stdin"); code != 0 {
		t.Fatalf("user add: %q", stderr)
	}
	if code, _, stderr := cli(t, "short\n", "user", "add", "--config", cfg, "bob", "--password-stdin"); code != exitUser || !strings.Contains(stderr, "8") {
		t.Fatalf("short password: %d %q", code, stderr)
	}
	if code, _, stderr := cli(t, "", "user", "add", "--config", cfg, "carol"); code != exitUsage || !strings.Contains(stderr, "--password-stdin") {
		t.Fatalf("no terminal: %d %q", code, stderr)
	}
	if code, _, _ := cli(t, "another long password\n", "user", "passwd", "--config", cfg, "alice", "--password-stdin"); code != 0 {
		t.Fatal("passwd failed")
	}
	code, out, _ = cli(t, "", "user", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("user list: %q", out)
	}
	if code, _, _ := cli(t, "", "user", "remove", "--config", cfg, "alice"); code != 0 {
		t.Fatal("remove failed")
	}
	if code, _, stderr := cli(t, "", "user", "remove", "--config", cfg, "alice"); code != exitUser || !strings.Contains(stderr, "no user") {
		t.Fatalf("remove twice: %d %q", code, stderr)
	}

	code, out, stderr = cli(t, "", "log", "verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("verify: %d %q %q", code, out, stderr)
	}
	code, out, _ = cli(t, "", "log", "export", "--config", cfg)
	if code != 0 {
		t.Fatal("export failed")
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e events.Envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		kinds = append(kinds, e.Kind)
	}
	want := []string{"token.created", "token.created", "token.revoked", "user.added", "user.password_changed", "user.removed"}
	if d := cmp.Diff(want, kinds[len(kinds)-len(want):]); d != "" {
		t.Fatalf("exported kinds (-want +got):\n%s", d)
	}
	if strings.Contains(out, "correct horse") || strings.Contains(out, secret) {
		t.Fatal("the log holds a password or a token secret")
	}
	return secret
}

func TestAdminWithoutServe(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	adminScenario(t, cfg)
	fi, err := os.Stat(filepath.Join(filepath.Dir(cfg), "data", "jocasta.db"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database file mode: %v %v", fi, err)
	}
}

func TestAdminWhileServing(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	d := startDaemon(t, cfg)
	sock := filepath.Join(filepath.Dir(cfg), "data", "jocasta.sock")
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("control socket: %v %v", fi, err)
	}
	secret := adminScenario(t, cfg)
	// The token made through the socket works at once.
	if code, body := d.do(t, "GET", "/api/stats", secret, "", ""); code != 200 {
		t.Fatalf("stats with new token: %d %s", code, body)
	}
	// log tail follows new events until cancelled.
	pr, pw := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		run(ctx, []string{"log", "tail", "--config", cfg}, nil, strings.NewReader(""), pw, pw)
		pw.Close()
	}()
	time.Sleep(300 * time.Millisecond)
	if code, _, _ := cli(t, "", "token", "create", "--config", cfg, "--name", "tailed", "--mode", "read", "--expires", "30d"); code != 0 {
		t.Fatal("create failed")
	}
	pr.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := pr.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), `"kind":"token.created"`) || !strings.Contains(string(buf[:n]), "tailed") {
		t.Fatalf("tail read %q %v", buf[:n], err)
	}
	cancel()
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatal("control socket left behind after stop")
	}
}

// TestSecondServeRefusedClearly checks that serve refuses a database that
// another serve, or an admin command, holds: with a one-line error,
// within 2 seconds.
func TestSecondServeRefusedClearly(t *testing.T) {
	tests := []struct {
		name string
		hold func(t *testing.T, cfgPath string, cfg *config.Config)
		want string
	}{
		{"serve runs", func(t *testing.T, cfgPath string, _ *config.Config) { startDaemon(t, cfgPath) },
			"jocasta serve already runs on"},
		{"admin holds the database", func(t *testing.T, _ string, cfg *config.Config) {
			c, err := openCore(context.Background(), cfg, zerolog.Nop(), openCreate)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}, "in use by another process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgPath := writeConfig(t, t.TempDir(), noSweeps)
			c, err := config.Load(cfgPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.hold(t, cfgPath, c)
			start := time.Now()
			err = serve(context.Background(), c, zerolog.Nop(), nil, &serveHooks{addr: "127.0.0.1:0"})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("second serve: %v; want one line containing %q", err, tt.want)
			}
			if took >= 2*time.Second {
				t.Errorf("second serve refused after %s, want under 2s", took)
			}
		})
	}
}

// seed appends sweeps to the database of cfg while serve is not running.
func seed(t *testing.T, cfg string, sweeps ...*sources.Sweep) {
	t.Helper()
	c, err := config.Load(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(c, openCreate)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, s := range sweeps {
		e, err := ingest.SweepEvent(s, "sweep:test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

type hostSpec struct {
	ip, mac, dns string
}

func sweepAt(at time.Time, hosts ...hostSpec) *sources.Sweep {
	nets := []netip.Prefix{netip.MustParsePrefix("10.9.0.0/24"), netip.MustParsePrefix("10.8.0.0/24")}
	s := &sources.Sweep{ScanID: "s" + at.Format("20060102150405"), Started: at.Add(-5 * time.Second), Finished: at, Networks: nets, ProbesSent: 1016, Complete: true}
	for _, h := range hosts {
		ip := netip.MustParseAddr(h.ip)
		host := &sources.Host{IP: ip, RTT: time.Millisecond, Via: sources.ViaICMP}
		for _, n := range nets {
			if n.Contains(ip) {
				host.Network = n
			}
		}
		if h.mac != "" {
			host.MAC, _ = net.ParseMAC(h.mac)
		}
		host.SetName(sources.NameDNS, h.dns)
		s.Hosts = append(s.Hosts, host)
	}
	return s
}

// snapshotAPI answers every read endpoint from the database of cfg (serve
// not running) and returns path → body.
func snapshotAPI(t *testing.T, cfg *config.Config, token string) map[string]string {
	t.Helper()
	c, err := openCore(context.Background(), cfg, zerolog.Nop(), openCreate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.api(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	v := apitest.NewValidator(t)
	get := func(path string) string {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, body := v.Do(t, h, req)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	out := map[string]string{}
	for _, p := range []string{"/api/devices?limit=1000", "/api/events?limit=1000", "/api/scans?limit=1000", "/api/stats", "/api/groups"} {
		out[p] = get(p)
	}
	var page projections.Page[projections.Device]
	if err := json.Unmarshal([]byte(out["/api/devices?limit=1000"]), &page); err != nil {
		t.Fatal(err)
	}
	for _, d := range page.Items {
		for _, p := range []string{"/api/devices/" + d.ID, "/api/devices/" + d.ID + "/events"} {
			out[p] = get(p)
		}
	}
	return out
}

func deviceCount(t *testing.T, snap map[string]string) int {
	var page projections.Page[projections.Device]
	if err := json.Unmarshal([]byte(snap["/api/devices?limit=1000"]), &page); err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// TestReplayEquality drives a realistic history — sweeps, an address move,
// devices going offline, edits, watch, a purge — then rebuilds it with
// jocasta replay and checks every API response is identical; and that
// replay --until gives the inventory as it was then.
func TestReplayEquality(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, noSweeps+"retention:\n  history: 720h\n  devices: 2160h\n")
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	a := hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}
	b := hostSpec{"10.9.0.11", "02:42:ac:00:00:02", ""}
	c1 := hostSpec{"10.9.0.12", "00:1b:63:00:00:03", "gamma.lab"}
	c2 := hostSpec{"10.9.0.40", "00:1b:63:00:00:03", "gamma.lab"}
	offlink := hostSpec{"10.8.0.5", "", ""}
	old := hostSpec{"10.9.0.99", "00:1b:63:00:00:99", "old.lab"}
	tMove := now.Add(-2 * day)
	seed(t, cfgPath,
		sweepAt(now.Add(-100*day), old),
		sweepAt(now.Add(-40*day), a, b, c1),
		sweepAt(tMove, a, b, c2, offlink),
		sweepAt(now.Add(-1*day), a),
	)
	d := startDaemonWith(t, cfgPath, &serveHooks{purgeDelay: 50 * time.Millisecond})
	code, out, _ := cli(t, "", "token", "create", "--config", cfgPath, "--name", "replay", "--mode", "read_write", "--expires", "never")
	if code != 0 {
		t.Fatal("token create failed")
	}
	tok := lastLine(out)
	ids := map[string]string{}
	code, body := d.do(t, "GET", "/api/devices?limit=1000", tok, "", "")
	var page projections.Page[projections.Device]
	if code != 200 || json.Unmarshal(body, &page) != nil {
		t.Fatalf("devices: %d %s", code, body)
	}
	for _, dev := range page.Items {
		for _, ad := range dev.Addresses {
			ids[ad.IP] = dev.ID
		}
	}
	if code, body := d.do(t, "PATCH", "/api/devices/"+ids[b.ip], tok, "application/merge-patch+json", `{"label":"Phone","group":"family","notes":"kid's"}`); code != 200 {
		t.Fatalf("patch: %d %s", code, body)
	}
	if code, body := d.do(t, "PATCH", "/api/devices/"+ids[c2.ip]+"/watch", tok, "application/json", `{"watched":true}`); code != 200 || !strings.Contains(string(body), `"presence":"quiet"`) {
		t.Fatalf("watch: %d %s", code, body)
	}
	// The purge removes the device unseen for 100 days and history older
	// than 30 days; wait until it is recorded.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := d.do(t, "GET", "/api/events?kind=device.deleted", tok, "", "")
		if strings.Contains(string(body), ids[old.ip]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no purge recorded; log:\n%s", d.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := snapshotAPI(t, cfg, tok)
	if n := deviceCount(t, live); n != 4 {
		t.Fatalf("live inventory has %d devices, want 4 (old one purged)", n)
	}
	for _, want := range []string{`"kind":"device.address_retired"`, `"kind":"device.offline"`, `"kind":"device.edited"`, `"kind":"device.watch_started"`, `"kind":"device.deleted"`} {
		if !strings.Contains(live["/api/events?limit=1000"], want) {
			t.Errorf("change log lacks %s:\n%s", want, live["/api/events?limit=1000"])
		}
	}

	replayed := filepath.Join(dir, "replayed.db")
	if code, out, stderr := cli(t, "", "replay", "--config", cfgPath, "--output", replayed); code != 0 {
		t.Fatalf("replay: %s %s", out, stderr)
	}
	rcfg := *cfg
	rcfg.DB.Path, rcfg.DB.Name = dir, "replayed.db"
	again := snapshotAPI(t, &rcfg, tok)
	if d := cmp.Diff(live, again); d != "" {
		t.Fatalf("replayed API differs from live (-live +replayed):\n%s", d)
	}

	// As it was one hour after the move: five devices, the old one not yet
	// purged, nobody edited.
	until := filepath.Join(dir, "until.db")
	if code, _, stderr := cli(t, "", "replay", "--config", cfgPath, "--until", tMove.Add(time.Hour).Format(time.RFC3339), "--output", until); code != 0 {
		t.Fatalf("replay --until: %s", stderr)
	}
	// The token was created after T, so read the replayed file directly.
	ucfg := *cfg
	ucfg.DB.Path, ucfg.DB.Name = dir, "until.db"
	uc, err := openCore(context.Background(), &ucfg, zerolog.Nop(), openExisting)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	upage, err := uc.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(upage.Items) != 5 {
		t.Fatalf("at T the inventory had %d devices, want 5", len(upage.Items))
	}
	for _, dev := range upage.Items {
		if dev.Label != nil || dev.Watched {
			t.Fatalf("device %s edited before the edit: %+v", dev.ID, dev)
		}
	}
	if code, _, stderr := cli(t, "", "replay", "--config", cfgPath, "--output", until); code != exitUser || !strings.Contains(stderr, "already exists") {
		t.Fatalf("replay over an existing file: %d %q", code, stderr)
	}
}

func startDaemonWith(t *testing.T, cfgPath string, hooks *serveHooks) *daemon {
	t.Helper()
	testHooks = hooks
	defer func() { testHooks = nil }()
	return startDaemon(t, cfgPath)
}

// tamperedLog writes a config whose log holds three token creations, the
// second edited behind jocasta's back (so its hash no longer matches).
func tamperedLog(t *testing.T) string {
	t.Helper()
	cfg := writeConfig(t, t.TempDir(), noSweeps)
	for _, name := range []string{"a", "b", "c"} {
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", name, "--mode", "read", "--expires", "never"); code != 0 {
			t.Fatal(stderr)
		}
	}
	dbFile := filepath.Join(filepath.Dir(cfg), "data", "jocasta.db")
	db, err := bolt.Open(dbFile, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(store.BucketLog))
		key := []byte{0, 0, 0, 0, 0, 0, 0, 2}
		v := bytes.Replace(append([]byte(nil), b.Get(key)...), []byte(`"name":"b"`), []byte(`"name":"B"`), 1)
		return b.Put(key, v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLogVerifyReportsTampering edits one stored event behind jocasta's
// back and checks that log verify exits 1 naming that seq.
func TestLogVerifyReportsTampering(t *testing.T) {
	cfg := tamperedLog(t)
	code, _, stderr := cli(t, "", "log", "verify", "--config", cfg)
	if code != exitUser || !strings.Contains(stderr, "seq 2") {
		t.Fatalf("verify of a tampered log: exit %d %q", code, stderr)
	}
}

// TestReplayAndVerifyOutput checks replay's refusals and its message, and
// that log verify --json writes snake_case with first_bad null when intact.
func TestReplayAndVerifyOutput(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps)
	if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "a", "--mode", "read", "--expires", "never"); code != 0 {
		t.Fatal(stderr)
	}
	existing := filepath.Join(dir, "existing.db")
	os.WriteFile(existing, nil, 0o600)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"replay", []string{"replay", "--output", filepath.Join(dir, "r.db")}, exitOK, "replayed 1 event into ", ""},
		{"replay without --output", []string{"replay"}, exitOK, "replayed 1 event into " + filepath.Join(dir, "data", "jocasta.replay-"), ""},
		{"replay over a file", []string{"replay", "--output", existing}, exitUser, "", "already exists"},
		{"replay into a missing directory", []string{"replay", "--output", filepath.Join(dir, "missing", "r.db")}, exitUser, "", "does not exist; create it first"},
		{"verify json", []string{"log", "verify", "--json"}, exitOK, `"first_bad": null`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := cli(t, "", append(tt.args, "--config", cfg)...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d stdout %q stderr %q; want exit %d, stdout with %q, stderr with %q", code, out, stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Error("replay created the missing directory")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "data", "jocasta.replay-*Z.db")); len(m) != 1 {
		t.Errorf("replay without --output wrote %v beside the database; want one jocasta.replay-<time>.db", m)
	}
	_, out, _ := cli(t, "", "log", "verify", "--json", "--config", cfg)
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ok": true, "first": 1.0, "head": 1.0, "checked": 1.0, "first_bad": nil, "reason": nil}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("log verify --json (-want +got):\n%s", d)
	}
}

// TestConfigWarnings checks that config check and config show both report
// accepted oddities on stderr and still succeed, never showing a secret.
func TestConfigWarnings(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "plugins:\n  routerapi:\n    core: {enabled: true, host: 192.0.2.1, password: S3CR3T, insecure: true}\n")
	for _, tt := range []struct {
		cmd    string
		stdout string
	}{
		{"check", "ok: "},
		{"show", "password: \"[redacted]\""},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			code, out, stderr := cli(t, "", "config", tt.cmd, "--config", cfg)
			if code != 0 || !strings.Contains(out, tt.stdout) {
				t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
			}
			for _, want := range []string{"warning: ", "plugins.routerapi.core.insecure: has no effect", "plugins.routerapi.core.password: travels as plain text"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
			if strings.Contains(out+stderr, "S3CR3T") {
				t.Errorf("secret shown:\n%s\n%s", out, stderr)
			}
		})
	}
}

// TestReplayProgress: a replay run alone reports how far it got on
// standard error.
func TestReplayProgress(t *testing.T) {
	prev := replayProgressEvery
	replayProgressEvery = 0
	t.Cleanup(func() { replayProgressEvery = prev })
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps)
	for _, name := range []string{"a", "b"} {
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", name, "--mode", "read", "--expires", "never"); code != 0 {
			t.Fatal(stderr)
		}
	}
	code, _, stderr := cli(t, "", "replay", "--config", cfg, "--output", filepath.Join(dir, "r.db"))
	if code != exitOK || !strings.Contains(stderr, "replay: 2 of 2 events applied (100%)") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
