package ui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/ui"
)

// t0 is the tests' start time.
var t0 = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

// clock is a settable clock shared by the stack's parts.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// stack is the real read and write side (store, runner, inventory and
// access projections, Commander) with the web interface over it.
type stack struct {
	t     testing.TB
	st    *store.Store
	run   *runner.Runner
	inv   *inventory.Inventory
	acc   *access.Projection
	cmd   *command.Commander
	clock *clock
	ui    *ui.Server
	setup string // the setup link's secret, when made with one
	flows *traffic.Projection
	disp  *notify.Dispatcher
	rules *notify.Rules
	// reader is the inventory as the web interface reads it.
	reader ui.Inventory
}

type stackOpts struct {
	cfg     ui.Config
	setup   bool
	wrapInv func(ui.Inventory) ui.Inventory
	wrapCmd func(ui.Commander) ui.Commander
	dbPath  string
	// traffic adds the traffic read model (home country DE) and hands it
	// to the web interface; notify adds the notification rules and a
	// dispatcher sending to these destinations.
	traffic bool
	// homeFromRouter leaves location.country empty: the home comes from
	// the router's outside address.
	homeFromRouter bool
	dns            bool
	notify         []notify.Destination
}

func defaultConfig() ui.Config {
	return ui.Config{SessionLifetime: 24 * time.Hour, IdleTimeout: time.Hour, CookieSecure: true, Settings: "server:\n  port: 8080\n"}
}

func newStack(t testing.TB, o stackOpts) *stack {
	t.Helper()
	if o.cfg.SessionLifetime == 0 {
		cfg := defaultConfig()
		cfg.Location, cfg.Settings = o.cfg.Location, cmpOr(o.cfg.Settings, cfg.Settings)
		cfg.SignInBurst, cfg.AccountBurst = o.cfg.SignInBurst, o.cfg.AccountBurst
		o.cfg = cfg
	}
	path := o.dbPath
	if path == "" {
		path = filepath.Join(t.TempDir(), "ui.db")
	}
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: t0}
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	acc := access.New(clk.Now)
	scans := scanlog.New(nil)
	projs := []runner.Projection{inv, scans, acc}
	var flows *traffic.Projection
	if o.traffic {
		countries, err := traffic.LoadCountries("")
		if err != nil {
			t.Fatalf("country database (make country): %v", err)
		}
		topts := traffic.Options{Addresses: inv, Countries: countries, Home: "DE"}
		if o.homeFromRouter {
			topts.Home, topts.Outside = "", inv.Outside
		}
		if flows, err = traffic.New(topts); err != nil {
			t.Fatal(err)
		}
		projs = append(projs, flows)
	}
	var lookups *dns.Projection
	if o.dns {
		if lookups, err = dns.New(dns.Options{Addresses: inv}); err != nil {
			t.Fatal(err)
		}
		projs = append(projs, lookups)
	}
	rules := notify.NewRules()
	if o.notify != nil {
		projs = append(projs, rules)
	}
	run, err := runner.New(st, projs, runner.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st.OnCommit(func(uint64) { run.Notify() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = st.Close()
	})
	if err := run.WaitFor(ctx, st.Head()); err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, st: st, run: run, inv: inv, acc: acc, clock: clk, flows: flows, rules: rules}
	s.cmd = &command.Commander{Log: st, Sync: run.WaitFor, Devices: inv, Accounts: acc, Now: clk.Now}
	reader := inventoryReader{Inventory: inv, scans: scans}
	s.reader = reader
	deps := ui.Deps{Inventory: reader, Accounts: acc, Commander: s.cmd, Log: zerolog.Nop(), Now: clk.Now}
	if flows != nil {
		deps.Traffic = flows
	}
	if lookups != nil {
		deps.DNS = lookups
	}
	if o.notify != nil {
		d, err := notify.New(notify.Options{DB: st.DB(), Head: st.Head, WaitFor: run.WaitFor, Feed: inv, Rules: rules,
			Destinations: o.notify, Now: clk.Now, Poll: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithCancel(context.Background())
		ddone := make(chan error, 1)
		go func() { ddone <- d.Run(dctx) }()
		t.Cleanup(func() {
			dcancel()
			<-ddone
		})
		s.disp = d
		deps.Notifications = &notifications{d: d, rules: rules, cmd: s.cmd}
	}
	if o.wrapInv != nil {
		deps.Inventory = o.wrapInv(reader)
	}
	if o.wrapCmd != nil {
		deps.Commander = o.wrapCmd(s.cmd)
	}
	if o.setup {
		deps.Setup, s.setup = ui.NewSetup()
	}
	s.ui, err = ui.New(o.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// addUser adds an account through the write side.
func (s *stack) addUser(name, password string) {
	s.t.Helper()
	if err := s.cmd.AddUser(context.Background(), "cli", "test", name, password); err != nil {
		s.t.Fatal(err)
	}
}

// sweep appends a complete sweep of 10.0.0.0/24 with the given hosts
// and waits for the projections. Host i is 10.0.0.(i+1) with a MAC.
func (s *stack) sweep(at time.Time, hosts ...events.SweepHost) {
	s.t.Helper()
	ev := events.MustNew(events.KindSweepCompleted, events.SweepCompleted{
		ScanID: fmt.Sprintf("s%d", at.UnixNano()), Started: at.Add(-10 * time.Second), Finished: at,
		Networks: []string{"10.0.0.0/24"}, ProbesSent: 254, Complete: true, Hosts: hosts,
	}, at)
	ev.Source = "sweep:lab"
	s.appendWait(ev)
}

func (s *stack) appendWait(evs ...events.Envelope) {
	s.t.Helper()
	out, err := s.st.Append(context.Background(), evs...)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.run.WaitFor(context.Background(), out[len(out)-1].Seq); err != nil {
		s.t.Fatal(err)
	}
}

func host(i int, name string) events.SweepHost {
	h := events.SweepHost{IP: fmt.Sprintf("10.0.0.%d", i), Network: "10.0.0.0/24", Via: "icmp", RTTMicros: 900,
		MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256)}
	if name != "" {
		h.Names = events.NamesOf(map[string]string{"dns": name})
	}
	return h
}

// deviceID is the id of the device holding ip.
func (s *stack) deviceID(ip string) string {
	s.t.Helper()
	p, err := s.inv.ListDevices(context.Background(), deviceFilterQ(ip))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, d := range p.Items {
		for _, a := range d.Addresses {
			if a.IP == ip && a.RetiredAt == nil {
				return d.ID
			}
		}
	}
	s.t.Fatalf("no device at %s", ip)
	return ""
}

// client drives the handler as one browser: it keeps the session cookie
// and the page's form token.
type client struct {
	t      testing.TB
	h      http.Handler
	cookie *http.Cookie
	token  string
	addr   string
}

func (s *stack) client() *client {
	return &client{t: s.t, h: s.ui, addr: "192.0.2.10:5000"}
}

func (c *client) do(req *http.Request) *httptest.ResponseRecorder {
	c.t.Helper()
	req.RemoteAddr = c.addr
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	for _, ck := range w.Result().Cookies() {
		if ck.Name == ui.CookieName {
			if ck.MaxAge < 0 || ck.Value == "" {
				c.cookie = nil
			} else {
				c.cookie = ck
			}
		}
	}
	if m := tokenRE.FindStringSubmatch(w.Body.String()); m != nil {
		c.token = m[1]
	}
	return w
}

var tokenRE = regexp.MustCompile(`name="form_token" value="([0-9a-f]+)"`)

func (c *client) get(path string) *httptest.ResponseRecorder {
	c.t.Helper()
	return c.do(httptest.NewRequest(http.MethodGet, path, nil))
}

// post sends a form, with the current form token unless form has one.
func (c *client) post(path string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["form_token"]; !ok && c.token != "" {
		form.Set("form_token", c.token)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.do(req)
}

// signIn signs in and loads the devices page (for the form token).
func (c *client) signIn(name, password string) {
	c.t.Helper()
	w := c.post("/signin", url.Values{"name": {name}, "password": {password}})
	if w.Code != http.StatusSeeOther || c.cookie == nil {
		c.t.Fatalf("sign in as %s: %d %s", name, w.Code, w.Body.String())
	}
	if w := c.get("/settings"); w.Code != http.StatusOK || c.token == "" {
		c.t.Fatalf("a page after sign-in: %d", w.Code)
	}
}

func wantStatus(t testing.TB, w *httptest.ResponseRecorder, code int, contains ...string) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("status %d, want %d; body:\n%.2000s", w.Code, code, w.Body.String())
	}
	for _, s := range contains {
		if !strings.Contains(w.Body.String(), s) {
			t.Errorf("body lacks %q:\n%.3000s", s, w.Body.String())
		}
	}
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

func htmlUnescape(s string) string { return html.UnescapeString(s) }

// notifications is serve's notifications (cmd/jocasta/notify.go) over
// the stack: the dispatcher's destinations and ledger, rules set
// through the write side with source "ui".
type notifications struct {
	d     *notify.Dispatcher
	rules *notify.Rules
	cmd   *command.Commander
}

func (n *notifications) dest(name string) (*notify.Destination, error) {
	d, ok := n.d.Destination(name)
	if !ok {
		return nil, fmt.Errorf("notify.%s: %w", name, projections.ErrNotFound)
	}
	return d, nil
}

func (n *notifications) Destinations(context.Context) ([]notify.View, error) {
	var out []notify.View
	for _, d := range n.d.Destinations() {
		v, err := notify.ViewOf(n.d.DB(), d, n.rules)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (n *notifications) Destination(_ context.Context, name string) (notify.View, error) {
	d, err := n.dest(name)
	if err != nil {
		return notify.View{}, err
	}
	return notify.ViewOf(n.d.DB(), d, n.rules)
}

func (n *notifications) SetRules(ctx context.Context, actor, name string, rules []events.NotifyRule) (notify.View, error) {
	if _, err := n.dest(name); err != nil {
		return notify.View{}, err
	}
	if err := n.cmd.SetNotifyRules(ctx, "ui", actor, n.rules, name, rules); err != nil {
		return notify.View{}, err
	}
	return n.Destination(ctx, name)
}

func (n *notifications) Ledger(_ context.Context, name string, f notify.LedgerFilter) (projections.Page[notify.Record], error) {
	if _, err := n.dest(name); err != nil {
		return projections.Page[notify.Record]{}, err
	}
	return notify.ReadLedger(n.d.DB(), name, f)
}

func (n *notifications) Test(ctx context.Context, name string) (notify.Attempt, error) {
	if _, err := n.dest(name); err != nil {
		return notify.Attempt{}, err
	}
	return n.d.Test(ctx, name)
}

func (n *notifications) Redeliver(_ context.Context, name, id string) (int, error) {
	if _, err := n.dest(name); err != nil {
		return 0, err
	}
	return n.d.Redeliver(name, id)
}

// inventoryReader is serve's (cmd/jocasta): the inventory, with the scan
// log's entries for ListScans.
type inventoryReader struct {
	*inventory.Inventory
	scans *scanlog.Log
}

func (r inventoryReader) ListScans(ctx context.Context, f projections.ScanFilter) (projections.Page[projections.Scan], error) {
	return r.scans.ListScans(ctx, f)
}
