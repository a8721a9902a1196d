package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

// dnsRead appends one read of a DNS server's query log.
func (s *stack) dnsRead(fin time.Time, rows ...events.DNSRow) {
	s.t.Helper()
	ev := events.MustNew(events.KindDNSRead, events.DNSRead{ScanID: "r" + fin.Format("150405"), Kind: "dnsfilter1",
		Started: fin, Finished: fin, Complete: true, Cursor: fin.Format(time.RFC3339), Rows: rows}, fin)
	ev.Source = "dnsfilter1:pi"
	s.appendWait(ev)
}

func TestDNSPage(t *testing.T) {
	s, c := seeded(t, stackOpts{dns: true})
	h := t0.Add(-time.Hour)
	s.dnsRead(t0.Add(-5*time.Minute),
		events.DNSRow{Hour: h.Unix(), Client: "10.0.0.1", Lookups: []events.DNSLookup{
			{Domain: "ads.tracker.example", Count: 40, Blocked: 40}, {Domain: "printer-vendor.example", Count: 12}}},
		events.DNSRow{Hour: h.Unix(), Client: "10.0.0.2", Lookups: []events.DNSLookup{{Domain: "nas-updates.example", Count: 7, Blocked: 1}}},
		events.DNSRow{Hour: h.Unix(), Client: "10.0.0.77", Lookups: []events.DNSLookup{{Domain: "stranger.example", Count: 2}}},
	)
	w := c.get("/dns")
	wantStatus(t, w, http.StatusOK, `aria-current="page">DNS`, "<b>61</b> lookups", "<b>41</b> blocked",
		"ads.tracker.example", "printer-vendor.example", "printer.lan", "nas.lan", "10.0.0.77", "(no device known)")
	body := w.Body.String()
	// Most first: the printer (52) before the NAS (7) before the stranger.
	if p, n, x := strings.Index(body, ">printer.lan<"), strings.Index(body, ">nas.lan<"), strings.Index(body, "10.0.0.77"); p < 0 || p > n || n > x {
		t.Errorf("clients out of order: %d %d %d", p, n, x)
	}
	blocked := body[strings.Index(body, `id="h-blocked"`):]
	if strings.Contains(blocked[:strings.Index(blocked, "</table>")], "printer-vendor.example") {
		t.Error("a domain never blocked is in Most blocked")
	}
	wantStatus(t, c.get("/dns?since=2026-01-01&until=2026-01-02"), http.StatusOK, "No lookup in this range.", "Nothing blocked")
	wantStatus(t, c.get("/dns?range=1y"), http.StatusBadRequest, "The range must be")
	wantStatus(t, c.get("/dns?q=ads"), http.StatusBadRequest, "Unknown query parameter")

	wantStatus(t, c.get("/devices/"+s.deviceID("10.0.0.1")), http.StatusOK, "Top domains looked up, last 24 hours", "52 lookups, 40 blocked", "ads.tracker.example")
	wantStatus(t, c.get("/devices/"+s.deviceID("10.0.0.3")), http.StatusOK, "No lookup recorded in the last 24 hours.")
}

func TestDNSOff(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	if strings.Contains(c.get("/devices").Body.String(), `href="/dns"`) {
		t.Error("the menu links to the DNS page with no lookups recorded")
	}
	wantStatus(t, c.get("/dns"), http.StatusOK, `id="dns-off"`, "dnsnode, dnsfilter1 or dnsfilter2")
	if strings.Contains(c.get("/devices/"+s.deviceID("10.0.0.1")).Body.String(), "Top domains") {
		t.Error("the device page has a DNS section with no lookups recorded")
	}
}
