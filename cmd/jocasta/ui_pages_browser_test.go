package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/sources/dnsfilter1/dnsfilter1test"
)

// seedEvents appends events to the log of cfg's database before serve
// starts (as seed does for sweeps).
func seedEvents(t *testing.T, cfg string, evs ...events.Envelope) {
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
	if _, err := st.Append(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
}

// TestWebPagesInChromium drives the Notifications, Traffic and DNS pages
// of a real serve in headless Chromium: a flow listener (its windows
// seeded in the log), a Pi-hole fake read by dnsfilter1 and a webhook
// destination to a local receiver. Every page loads with no console
// error and no failed request (screenshots in docs/screenshots); a
// destination's selection changed in the browser is what the API shows;
// the test button reaches the receiver; no secret is on any page.
func TestWebPagesInChromium(t *testing.T) {
	ctx := browser(t)
	var probs problems
	if err := chromedp.Listen(ctx, probs.listen); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	now := time.Now().UTC().Truncate(time.Second)
	pi := &dnsfilter1test.Fake{Password: "pi-s3cret"}
	for i, q := range []struct{ domain, status, client string }{
		{"example.com", "FORWARDED", "10.9.0.1"}, {"example.com", "CACHE", "10.9.0.1"},
		{"ads.tracker.example", "GRAVITY", "10.9.0.1"}, {"ads.tracker.example", "GRAVITY", "10.9.0.2"},
		{"updates.vendor.example", "FORWARDED", "10.9.0.2"}, {"stranger.example", "FORWARDED", "10.9.0.99"},
	} {
		pi.Add(dnsfilter1test.Query{Time: now.Add(-time.Duration(30-i) * time.Minute), Type: "A", Domain: q.domain, Status: q.status, Client: q.client})
	}
	piSrv := httptest.NewServer(pi)
	defer piSrv.Close()
	pu, _ := url.Parse(piSrv.URL)
	piHost, piPort, _ := net.SplitHostPort(pu.Host)

	// A free UDP port for the flow listener (nothing is sent to it).
	uc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	flowAddr := uc.LocalAddr().String()
	uc.Close()

	const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps+"server:\n  auth:\n    cookie_secure: false\n"+
		"location:\n  country: DE\n  timezone: Europe/Berlin\n"+
		"plugins:\n  flowlistener:\n    gw:\n      enabled: true\n      listen: "+flowAddr+"\n      exporters: [127.0.0.1]\n"+
		"  dnsfilter1:\n    pi:\n      enabled: true\n      host: "+piHost+"\n      port: "+piPort+"\n      password: pi-s3cret\n"+
		"notify:\n  hook:\n    webhook:\n      url: "+rcv.URL+"/in/secret-path?token=tok123\n      secret: "+hookSecret+"\n")
	seed(t, cfg,
		sweepAt(now.Add(-2*time.Hour), hostSpec{"10.9.0.1", "00:11:32:aa:bb:01", "nas.lan"}, hostSpec{"10.9.0.2", "b8:27:eb:00:00:02", "pi.lan"}),
		sweepAt(now.Add(-time.Minute), hostSpec{"10.9.0.1", "00:11:32:aa:bb:01", "nas.lan"}, hostSpec{"10.9.0.2", "b8:27:eb:00:00:02", "pi.lan"}))
	win := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{
		ScanID: "w1", Started: now.Add(-31 * time.Minute), Finished: now.Add(-30 * time.Minute), Complete: true, Listen: "127.0.0.1:2055", First: true,
		Rows: []events.TrafficRow{
			{Src: "10.9.0.1", Dst: "8.8.8.8", Proto: 6, Port: 443, Bytes: 80_000_000, Packets: 60_000, Flows: 40},
			{Src: "8.8.8.8", Dst: "10.9.0.1", Proto: 6, Port: 443, Bytes: 9_000_000, Packets: 9_000, Flows: 40},
			{Src: "10.9.0.1", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 300_000, Packets: 3_000, Flows: 300},
			{Src: "10.9.0.2", Dst: "151.101.1.69", Proto: 6, Port: 443, Bytes: 12_000_000, Packets: 10_000, Flows: 12},
			{Src: "10.9.0.2", Dst: "133.242.0.3", Proto: 6, Port: 443, Bytes: 4_000_000, Packets: 3_000, Flows: 3},
			{Src: "10.9.0.2", Dst: "200.160.0.8", Proto: 6, Port: 443, Bytes: 2_000_000, Packets: 2_000, Flows: 2},
			{Src: "10.9.0.2", Dst: "10.9.0.1", Proto: 6, Port: 445, Bytes: 50_000_000, Packets: 40_000, Flows: 4},
		},
	}, now.Add(-30*time.Minute))
	win.Source = "flowlistener:gw"
	seedEvents(t, cfg, win)
	if code, _, stderr := cli(t, "correct horse\n", "user", "add", "ada", "--password-stdin", "--config", cfg); code != 0 {
		t.Fatalf("user add: %s", stderr)
	}
	tok := mustToken(t, cfg)
	d := startDaemon(t, cfg)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			page, _ := chromedp.Run(ctx, chromedp.Text("main"))
			t.Fatalf("%s: %v; at %s:\n%.3000s", what, err, loc, page)
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
	do("sign in", chromedp.Navigate(d.base+"/"), chromedp.WaitVisible("#signin"),
		chromedp.SendKeys("#name", "ada"), chromedp.SendKeys("#password", "correct horse"), chromedp.Click("#signin"), chromedp.WaitVisible("#bulk"))
	for _, nav := range []string{`a[href="/traffic"]`, `a[href="/dns"]`, `a[href="/notifications"]`} {
		if n, err := chromedp.Run(ctx, chromedp.Nodes(nav, chromedp.AtLeast(0))); err != nil || len(n) != 1 {
			t.Errorf("menu link %s: %d %v", nav, len(n), err)
		}
	}
	// The Pi-hole's lookups are read at start.
	id := deviceIDByName(t, ctx, d.base, "nas.lan")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := d.do(t, http.MethodGet, "/api/devices/"+id+"/dns", tok, "", "")
		if strings.Contains(string(body), "ads.tracker.example") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lookups read: %s\n%s", body, d.log)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Watching a device is a change the default selection does not send:
	// the ledger records it as filtered.
	do("watch", chromedp.Navigate(d.base+"/devices/"+id), chromedp.WaitVisible("#watch"), chromedp.Click("#watch"), chromedp.WaitReady(`input[name="watch"][value="no"]`))
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, body := d.do(t, http.MethodGet, "/api/notifications/hook/ledger", tok, "", "")
		if strings.Contains(string(body), `"state":"filtered"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never reached the ledger: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	shots := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path, wait string }{
		{"traffic", "/traffic", "#world"},
		{"dns", "/dns", "#h-clients"},
		{"device-activity", "/devices/" + id, "#h-domains"},
		{"notifications", "/notifications", "table.destinations"},
		{"notification", "/notifications/hook", "tr.st-filtered"},
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
		html, err := chromedp.Run(ctx, chromedp.OuterHTML("html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"secret-path", "tok123", hookSecret, "pi-s3cret"} {
			if strings.Contains(html, secret) {
				t.Errorf("page %s shows %q", p.path, secret)
			}
		}
	}
	// The map drew lines from Germany to the peers' countries, and the
	// device page lists its peers and domains.
	do("traffic", chromedp.Navigate(d.base+"/traffic"), chromedp.WaitVisible("#world"))
	if arcs, err := chromedp.Run(ctx, chromedp.Nodes("#world path.arc")); err != nil || len(arcs) < 3 {
		t.Errorf("%d arcs on the map (%v), want at least US, JP and BR", len(arcs), err)
	}
	do("device", chromedp.Navigate(d.base+"/devices/"+id), chromedp.WaitVisible("#h-peers"))
	if s := text("table.peers"); !strings.Contains(s, "8.8.8.8") || !strings.Contains(s, "US") {
		t.Errorf("device peers: %q", s)
	}
	if s := text("table.domains"); !strings.Contains(s, "ads.tracker.example") {
		t.Errorf("device domains: %q", s)
	}
	// Its Timeline lists the hour of traffic and of lookups beside its
	// changes, in location.timezone; a range with nothing in it says so.
	if s := text("table.timeline"); !strings.Contains(s, "traffic.hour") || !strings.Contains(s, "flows") || !strings.Contains(s, "dns.hour") ||
		!strings.Contains(s, "lookups") || !strings.Contains(s, "device.discovered") || !strings.Contains(s, "CE") {
		t.Errorf("device timeline: %q", s)
	}
	do("timeline range", chromedp.SetValue("#t-since", "2020-01-01"), chromedp.SetValue("#t-until", "2020-01-02"),
		chromedp.Click("#t-range"), chromedp.WaitVisible(`#t-since[value="2020-01-01"]`))
	if s := text("table.timeline"); !strings.Contains(s, "Nothing recorded in this range.") {
		t.Errorf("device timeline of 2020-01-01: %q", s)
	}
	if got := probs.take(); len(got) > 0 {
		t.Errorf("device timeline: %v", got)
	}

	// Change the selection: add device.offline to the watched rule, and a
	// rule for device.port_opened in 10.9.0.0/24 on the empty row.
	do("open the selection", chromedp.Navigate(d.base+"/notifications/hook"), chromedp.WaitVisible("#save-rules"))
	do("tick device.offline", chromedp.Click(`#rule-1 input[value="device.offline"]`))
	do("tick device.port_opened", chromedp.Click(`#rule-2 input[value="device.port_opened"]`))
	do("network scope", chromedp.SetValue("#rule-2-scope", "network"), chromedp.SendKeys("#rule-2-network", "10.9.0.0/24"))
	do("save", chromedp.Click("#save-rules"), chromedp.WaitVisible("#notice"))
	status, body := d.do(t, http.MethodGet, "/api/notifications/hook", tok, "", "")
	var v notify.View
	if err := json.Unmarshal(body, &v); status != http.StatusOK || err != nil {
		t.Fatalf("GET /api/notifications/hook: %d %v %s", status, err, body)
	}
	if v.Default || len(v.Rules) != 3 || v.RulesSetBy == nil || *v.RulesSetBy != "ada" ||
		strings.Join(v.Rules[1].Kinds, ",") != "device.online,device.offline,device.quiet" && strings.Join(v.Rules[1].Kinds, ",") != "device.online,device.quiet,device.offline" ||
		v.Rules[2].Scope != "network" || v.Rules[2].Network != "10.9.0.0/24" || strings.Join(v.Rules[2].Kinds, ",") != "device.port_opened" {
		t.Fatalf("the API sees rules %+v set by %v", v.Rules, v.RulesSetBy)
	}
	// A refused selection is explained on the form.
	do("refused selection", chromedp.Navigate(d.base+"/notifications/hook"), chromedp.WaitVisible("#save-rules"),
		chromedp.SetValue("#rule-2-network", "10.9.0.1/24"), chromedp.Click("#save-rules"), chromedp.WaitVisible("#rules-problem"))
	if s := text("#rules-problem"); !strings.Contains(s, "host bits set") {
		t.Errorf("refused selection: %q", s)
	}
	probs.take() // the 400 was expected

	// Send a test: the receiver gets it.
	before := hits.Load()
	do("send test", chromedp.Navigate(d.base+"/notifications/hook"), chromedp.WaitVisible("#send-test"),
		chromedp.Click("#send-test"), chromedp.WaitVisible("#test-result"))
	if s := text("#test-result"); !strings.Contains(s, "Test message sent: HTTP 204") || hits.Load() == before {
		t.Errorf("test: %q, receiver hits %d → %d", s, before, hits.Load())
	}
	if got := probs.take(); len(got) > 0 {
		t.Errorf("selection and test: %v", got)
	}
}
