package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/sources/dnsfilter1/dnsfilter1test"
	"github.com/jocasta/jocasta/sources/dnsfilter2/dnsfilter2test"
	"github.com/jocasta/jocasta/sources/dnsnode/dnsnodetest"
	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
)

// TestDNSPlugins runs serve with sweeps off beside a fake router (whose
// DHCP lease makes the device) and one fake of each DNS server kind on
// 127.0.0.1. The device's lookups from the three servers add up; the
// Pi-hole is signed out of after each read; a restart continues from the
// cursors in the log without counting anything twice; a server whose
// password is refused is a failed scan with the reason, and no secret
// reaches the log or the API.
func TestDNSPlugins(t *testing.T) {
	hostPort := func(h *httptest.Server) (string, string) {
		u, _ := url.Parse(h.URL)
		host, port, _ := net.SplitHostPort(u.Host)
		return host, port
	}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	at := func(m int) time.Time { return hour.Add(time.Duration(m) * time.Minute) }

	ros := routerapitest.New("inv", "ros-s3cret")
	ros.Set("ip/dhcp-server/lease", []routerapitest.Row{
		{"address": "10.77.0.5", "mac-address": "02:00:00:00:77:05", "host-name": "laptop", "status": "bound", "last-seen": "5s"},
	})
	pi := &dnsfilter1test.Fake{Password: "pi-s3cret"}
	pi.Add(
		dnsfilter1test.Query{Time: at(10), Type: "A", Domain: "example.com", Status: "FORWARDED", Client: "10.77.0.5"},
		dnsfilter1test.Query{Time: at(11), Type: "AAAA", Domain: "example.com", Status: "CACHE", Client: "10.77.0.5"},
		dnsfilter1test.Query{Time: at(12), Type: "A", Domain: "ads.example.net", Status: "GRAVITY", Client: "10.77.0.5"},
		dnsfilter1test.Query{Time: at(13), Type: "A", Domain: "other.example", Status: "FORWARDED", Client: "10.77.0.9"},
	)
	agh := &dnsfilter2test.Fake{User: "inv", Password: "agh-s3cret", Zone: time.FixedZone("CEST", 2*3600)}
	agh.Add(dnsfilter2test.Entry{Time: at(20), Client: "10.77.0.5", Name: "example.com", Type: "A", Answers: []string{"93.184.215.14"}})
	tech := &dnsnodetest.Fake{Token: "tech-t0ken", Apps: dnsnodetest.DefaultApps()}
	tech.Add(dnsnodetest.Entry{Time: at(30), Client: "10.77.0.5", QName: "example.com", QType: "A", Answer: "93.184.215.15"})

	servers := map[string]*httptest.Server{}
	for name, h := range map[string]http.Handler{"ros": ros, "pi": pi, "agh": agh, "tech": tech} {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		servers[name] = s
	}
	var b strings.Builder
	b.WriteString("scan:\n  devices:\n    enabled: false\n    interval: 2s\nplugins:\n")
	h, p := hostPort(servers["ros"])
	fmt.Fprintf(&b, "  routerapi:\n    core:\n      enabled: true\n      host: %s\n      port: %s\n      user: inv\n      password: ros-s3cret\n", h, p)
	h, p = hostPort(servers["pi"])
	fmt.Fprintf(&b, "  dnsfilter1:\n    pi:\n      enabled: true\n      host: %s\n      port: %s\n      password: pi-s3cret\n", h, p)
	h, p = hostPort(servers["agh"])
	fmt.Fprintf(&b, "  dnsfilter2:\n    agh:\n      enabled: true\n      host: %s\n      port: %s\n      user: inv\n      password: agh-s3cret\n", h, p)
	h, p = hostPort(servers["tech"])
	fmt.Fprintf(&b, "  dnsnode:\n    tech:\n      enabled: true\n      host: %s\n      port: %s\n      token: tech-t0ken\n", h, p)
	cfg := writeConfig(t, t.TempDir(), b.String())

	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "dns", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	deviceID := func(d *daemon) string {
		code, body := d.do(t, "GET", "/api/devices?q=10.77.0.5", tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil || len(page.Items) != 1 {
			return ""
		}
		return page.Items[0].ID
	}
	lookups := func(d *daemon, id string) string {
		code, body := d.do(t, "GET", "/api/devices/"+id+"/dns?since="+hour.Format(time.RFC3339), tok, "", "")
		var page projections.Page[dns.Item]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			return fmt.Sprintf("HTTP %d %s", code, body)
		}
		var sb strings.Builder
		for _, it := range page.Items {
			fmt.Fprintf(&sb, "%s %s %d/%d %v;", it.Hour.Format("15"), it.Domain, it.Count, it.Blocked, it.Answers)
		}
		return sb.String()
	}
	hh := hour.Format("15")
	want := fmt.Sprintf("%s ads.example.net 1/1 [];%s example.com 4/0 [93.184.215.14 93.184.215.15];", hh, hh)
	var id, got string
	if !eventually(60*time.Second, func() bool {
		if id == "" {
			id = deviceID(d)
		}
		got = lookups(d, id)
		return id != "" && got == want
	}) {
		t.Fatalf("lookups of the device: %s\nwant %s\nlog:\n%s", got, want, d.log)
	}
	_, scans := d.do(t, "GET", "/api/scans?source=dnsfilter1:pi&limit=1", tok, "", "")
	if !strings.Contains(string(scans), `"kind":"dnsfilter1"`) || !strings.Contains(string(scans), `"complete":true`) {
		t.Errorf("scan log of the Pi-hole: %s", scans)
	}
	if !eventually(10*time.Second, func() bool { return pi.Sessions() == 0 }) {
		t.Errorf("the Pi-hole holds %d sessions between reads", pi.Sessions())
	}

	// A restart continues from the cursors in the log.
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	pi.Add(dnsfilter1test.Query{Time: at(40), Type: "A", Domain: "example.com", Status: "FORWARDED", Client: "10.77.0.5"})
	agh.User = "someone-else" // its password is refused from now on
	d = startDaemon(t, cfg)
	want = fmt.Sprintf("%s ads.example.net 1/1 [];%s example.com 5/0 [93.184.215.14 93.184.215.15];", hh, hh)
	if !eventually(60*time.Second, func() bool { got = lookups(d, id); return got == want }) {
		t.Fatalf("after a restart: %s\nwant %s\nlog:\n%s", got, want, d.log)
	}
	var aghScans string
	if !eventually(30*time.Second, func() bool {
		_, body := d.do(t, "GET", "/api/scans?source=dnsfilter2:agh&limit=1", tok, "", "")
		aghScans = string(body)
		return strings.Contains(aghScans, "refused")
	}) {
		t.Fatalf("the refused AdGuard read is not in the scan log: %s", aghScans)
	}
	time.Sleep(3 * time.Second) // more reads: still no double counting
	if got = lookups(d, id); got != want {
		t.Fatalf("later reads counted again: %s", got)
	}
	for _, secret := range []string{"ros-s3cret", "pi-s3cret", "agh-s3cret", "tech-t0ken"} {
		if strings.Contains(d.log.String(), secret) || strings.Contains(aghScans, secret) {
			t.Errorf("the secret %q reached the log or the API", secret)
		}
	}
}
