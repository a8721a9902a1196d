package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, installed by .ci/run.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium with a fresh profile; it closes
// with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if inCI() {
			t.Fatalf("%s missing in CI: .ci/run must apt-get install chromium", chromiumPath)
		}
		t.Skipf("SKIPPING the browser tests: %s not found (apt-get install -y chromium); CI runs them", chromiumPath)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// problems records what a page must not do: console errors, uncaught
// exceptions, browser log errors (CSP refusals among them), failed
// requests and error statuses.
type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			msg = fmt.Sprintf("console %s", e.Type)
		}
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			msg = fmt.Sprintf("log %s: %s (%s)", e.Entry.Level, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		msg = "request failed: " + e.ErrorText
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			msg = fmt.Sprintf("%d from %s", e.Response.Status, e.Response.URL)
		}
	}
	if msg != "" {
		p.mu.Lock()
		p.list = append(p.list, msg)
		p.mu.Unlock()
	}
}

func (p *problems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.list
	p.list = nil
	return out
}

var setupLinkRE = regexp.MustCompile(`"setup_link":"([^"]+)"`)

// TestWebInterfaceInChromium drives the web interface of a real serve in
// headless Chromium: the setup link (twice), sign-in, a wrong password,
// every page with no console error and no failed request (taking the
// screenshots in docs/screenshots), an edit round trip, token create and
// revoke, a cross-site POST, sign-out, and session expiry.
func TestWebInterfaceInChromium(t *testing.T) {
	ctx := browser(t)
	var probs problems
	if err := chromedp.Listen(ctx, probs.listen); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps+"server:\n  auth:\n    cookie_secure: false\nlocation:\n  timezone: Europe/Berlin\n")
	now := time.Now().UTC().Truncate(time.Second)
	seed(t, cfg,
		sweepAt(now.Add(-3*time.Hour), hostSpec{"10.9.0.1", "00:11:32:aa:bb:01", "nas.lan"}, hostSpec{"10.9.0.2", "b8:27:eb:00:00:02", "pi.lan"}, hostSpec{"10.9.0.3", "", ""}),
		sweepAt(now.Add(-2*time.Hour), hostSpec{"10.9.0.1", "00:11:32:aa:bb:01", "nas.lan"}, hostSpec{"10.9.0.2", "b8:27:eb:00:00:02", "pi.lan"}),
		sweepAt(now.Add(-time.Minute), hostSpec{"10.9.0.1", "00:11:32:aa:bb:01", "nas.lan"}, hostSpec{"10.8.0.7", "", "printer.lan"}))
	d := startDaemon(t, cfg)

	var link string
	for deadline := time.Now().Add(10 * time.Second); link == ""; {
		if m := setupLinkRE.FindStringSubmatch(d.log.String()); m != nil {
			link = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve printed no setup link\n%s", d.log)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The setup link creates the first account and signs in.
	do("setup", chromedp.Navigate(link), chromedp.WaitVisible("#create"),
		chromedp.SendKeys("#name", "ada"), chromedp.SendKeys("#password", "correct horse"), chromedp.SendKeys("#password2", "correct horse"),
		chromedp.Click("#create"), chromedp.WaitVisible("#bulk"))
	// Used twice: refused.
	do("setup again", chromedp.Navigate(link), chromedp.WaitVisible("#error-msg"))
	if s := text("#error-msg"); !strings.Contains(s, "already used") {
		t.Fatalf("setup link used twice: %q", s)
	}
	// The 410 was expected; that it was recorded shows the listener works.
	if got := probs.take(); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "410 ") }) {
		t.Fatalf("the problem listener missed the 410: %v", got)
	}

	// Sign out, a wrong password, then sign in.
	do("sign out", chromedp.Navigate(d.base+"/devices"), chromedp.WaitVisible(".signout button"), chromedp.Click(".signout button"), chromedp.WaitVisible("#signin"))
	do("wrong password", chromedp.SendKeys("#name", "ada"), chromedp.SendKeys("#password", "wrong horse"), chromedp.Click("#signin"), chromedp.WaitVisible("#signin-problem"))
	if s := text("#signin-problem"); s != "Wrong name or password." {
		t.Fatalf("wrong password: %q", s)
	}
	probs.take() // the 401 above was expected
	do("sign in", chromedp.Navigate(d.base+"/scans"), chromedp.WaitVisible("#signin"),
		chromedp.SendKeys("#name", "ada"), chromedp.SendKeys("#password", "correct horse"), chromedp.Click("#signin"), chromedp.WaitVisible("table.scans"))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/scans") {
		t.Fatalf("after sign-in at %s, want back at /scans", loc)
	}

	// Every page, with no console error and no failed request.
	status, body := d.do(t, http.MethodGet, "/api/livez", "", "", "")
	if status != http.StatusOK {
		t.Fatalf("livez %d %s", status, body)
	}
	id := deviceIDByName(t, ctx, d.base, "nas.lan")
	shots := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path, wait string }{
		{"devices", "/devices", "#bulk"},
		{"device", "/devices/" + id, "#save"},
		{"changes", "/changes", "table.changes"},
		{"scans", "/scans", "table.scans"},
		{"groups", "/groups", "main table"},
		{"stats", "/stats", ".counts"},
		{"tokens", "/tokens", "#create-token"},
		{"users", "/users", "#add-user"},
		{"settings", "/settings", "#config"},
		{"history", "/history", "#devices-at"},
	}
	do("viewport", chromedp.EmulateViewport(1280, 900))
	for _, p := range pages {
		do(p.name, chromedp.Navigate(d.base+p.path), chromedp.WaitVisible(p.wait))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", p.name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, p.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := probs.take(); len(got) > 0 {
			t.Errorf("page %s: %v", p.path, got)
		}
	}

	// An edit round trip.
	do("edit", chromedp.Navigate(d.base+"/devices/"+id), chromedp.WaitVisible("#save"),
		chromedp.SetValue("#e-label", "Storage box"), chromedp.SetValue("#e-group", "basement"),
		chromedp.Click("#save"), chromedp.WaitVisible("#saved"))
	if v, _ := chromedp.Run(ctx, chromedp.Value("#e-label")); v != "Storage box" {
		t.Fatalf("label after save %q", v)
	}
	status, body = d.do(t, http.MethodGet, "/api/groups", mustToken(t, cfg), "", "")
	if status != http.StatusOK || !strings.Contains(string(body), "basement") {
		t.Fatalf("the API does not see the edit: %d %s", status, body)
	}

	// Token create (shown once) and revoke.
	do("create token", chromedp.Navigate(d.base+"/tokens"), chromedp.WaitVisible("#create-token"),
		chromedp.SendKeys("#t-name", "browser-made"), chromedp.Click("#create-token"), chromedp.WaitVisible("#secret"))
	secret := text("#secret")
	if status, _ := d.do(t, http.MethodGet, "/api/stats", secret, "", ""); status != http.StatusOK {
		t.Fatalf("the new token does not work: %d", status)
	}
	do("revoke token", chromedp.Navigate(d.base+"/tokens"), chromedp.WaitVisible(`button[aria-label="Revoke browser-made"]`),
		chromedp.Click(`button[aria-label="Revoke browser-made"]`), chromedp.WaitVisible("#revoked"))
	if status, _ := d.do(t, http.MethodGet, "/api/stats", secret, "", ""); status != http.StatusUnauthorized {
		t.Fatalf("the revoked token answers %d", status)
	}
	if got := probs.take(); len(got) > 0 {
		t.Errorf("edit and tokens: %v", got)
	}

	// A cross-site POST (another origin's page with a form aimed here,
	// the session cookie being sent) is refused, and changes nothing.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/devices/%s/watch"><input name="watch" value="yes"><input name="form_token" value="x"><button id="go">win a prize</button></form>`, d.base, id)
	}))
	defer evil.Close()
	do("cross-site post", chromedp.Navigate(evil.URL), chromedp.WaitVisible("#go"), chromedp.Click("#go"), chromedp.WaitVisible("#error-msg"))
	if s := text("#error-msg"); !strings.Contains(s, "another site") {
		t.Fatalf("cross-site POST answered %q", s)
	}
	status, body = d.do(t, http.MethodGet, "/api/devices/"+id, mustToken(t, cfg), "", "")
	if status != http.StatusOK || strings.Contains(string(body), `"watched":true`) {
		t.Fatalf("the cross-site POST changed the device: %s", body)
	}
	probs.take()
}

// TestWebSessionExpiryInChromium signs in to a serve whose sessions go
// idle after a second and last three: an idle session is refused
// server-side (its cookie still sent), and an active one ends with its
// lifetime.
func TestWebSessionExpiryInChromium(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps+"server:\n  auth:\n    cookie_secure: false\n    session_lifetime: 6s\n    idle_timeout: 2s\n")
	if code, _, stderr := cli(t, "correct horse\n", "user", "add", "ada", "--password-stdin", "--config", cfg); code != 0 {
		t.Fatalf("user add: %s", stderr)
	}
	d := startDaemon(t, cfg)
	signIn := chromedp.Steps(chromedp.Navigate(d.base+"/"), chromedp.WaitVisible("#signin"),
		chromedp.SendKeys("#name", "ada"), chromedp.SendKeys("#password", "correct horse"), chromedp.Click("#signin"), chromedp.WaitVisible("#bulk"))
	if err := chromedp.Do(ctx, signIn); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := chromedp.Do(ctx, chromedp.Navigate(d.base+"/stats"), chromedp.WaitVisible("#signin")); err != nil {
		t.Fatal(err)
	}
	if s, err := chromedp.Run(ctx, chromedp.Text(".notice")); err != nil || !strings.Contains(s, "without activity") {
		t.Fatalf("after the idle timeout: %q %v", s, err)
	}
	// Active every 400 ms, the session still ends with its lifetime. (The
	// idle timeout is 2 s, not less, so that a page load on a loaded
	// machine does not count as idleness.)
	if err := chromedp.Do(ctx, signIn); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		time.Sleep(400 * time.Millisecond)
		if err := chromedp.Do(ctx, chromedp.Navigate(d.base+"/groups"), chromedp.WaitVisible("main h1")); err != nil {
			t.Fatal(err)
		}
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		if strings.Contains(loc, "/signin") {
			if since := time.Since(start); since < 4*time.Second {
				t.Fatalf("signed out after %v, before the 6s lifetime", since)
			}
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("the session outlived its lifetime")
		}
	}
}

// deviceIDByName finds a device's id from the devices page's link.
func deviceIDByName(t *testing.T, ctx context.Context, base, name string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/devices?q="+name), chromedp.WaitVisible("#bulk")); err != nil {
		t.Fatal(err)
	}
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(`table.devices tbody a[href^="/devices/"]`, "href"))
	if err != nil || !href.Exists {
		t.Fatalf("no device link for %s: %v", name, err)
	}
	return strings.TrimPrefix(href.Value, "/devices/")
}

var tokenOnce sync.Map

// mustToken creates (once per config) a read token with the CLI.
func mustToken(t *testing.T, cfg string) string {
	t.Helper()
	if tok, ok := tokenOnce.Load(cfg); ok {
		return tok.(string)
	}
	code, out, stderr := cli(t, "", "token", "create", "--name", "browser-test", "--mode", "read", "--expires", "30d", "--config", cfg)
	if code != 0 {
		t.Fatalf("token create: %s", stderr)
	}
	tok := lastLine(out)
	tokenOnce.Store(cfg, tok)
	return tok
}
