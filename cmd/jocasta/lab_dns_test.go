package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/sources/dnsfilter1/dnsfilter1test"
	"github.com/jocasta/jocasta/sources/dnsfilter2/dnsfilter2test"
	"github.com/jocasta/jocasta/sources/dnsnode/dnsnodetest"
	"github.com/jocasta/jocasta/sources/lab"
)

// TestLabDNS runs serve in the lab's scanner namespace, sweeping the lab,
// beside a fake Pi-hole v6, a fake AdGuard Home and a fake Technitium node
// (two query-log apps, log_app picks one; times in the server's zone)
// served from the lab's gateway. Their logs hold lookups of the lab's real
// hosts and of an address no host holds yet. The test checks each
// device's lookups through the API (summed over servers, blocked counts,
// answers), that the Pi-hole holds no session between reads, and that when
// a host moves to the unknown address its earlier lookups attach to it.
func TestLabDNS(t *testing.T) {
	if testing.Short() && !inCI() {
		t.Skip("lab test: skipped with -short outside CI")
	}
	a := netip.MustParseAddr
	l := lab.New(t, lab.Spec{
		Prefix:  netip.MustParsePrefix("10.81.0.0/24"),
		Scanner: a("10.81.0.2"),
		DNS:     a("10.81.0.1"), // the gateway: the DNS servers' APIs
		Hosts: []lab.HostSpec{
			{Name: "printer", IP: a("10.81.0.10")},
			{Name: "laptop", IP: a("10.81.0.14")},
			{Name: "spare", IP: a("10.81.0.30")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	at := func(m int) time.Time { return hour.Add(time.Duration(m) * time.Minute) }

	pi := &dnsfilter1test.Fake{Password: "pi-lab-s3cret", MaxSessions: 2}
	pi.Add(
		dnsfilter1test.Query{Time: at(1), Type: "A", Domain: "printer-cloud.example", Status: "FORWARDED", Client: "10.81.0.10"},
		dnsfilter1test.Query{Time: at(2), Type: "A", Domain: "tracker.example", Status: "GRAVITY", Client: "10.81.0.14"},
		dnsfilter1test.Query{Time: at(3), Type: "A", Domain: "mail.example", Status: "FORWARDED", Client: "10.81.0.14"},
		dnsfilter1test.Query{Time: at(4), Type: "A", Domain: "later.example", Status: "FORWARDED", Client: "10.81.0.77"},
	)
	agh := &dnsfilter2test.Fake{User: "inv", Password: "agh-lab-s3cret", Zone: time.FixedZone("-0300", -3*3600)}
	agh.Add(
		dnsfilter2test.Entry{Time: at(5), Client: "10.81.0.14", Name: "mail.example", Type: "A", Answers: []string{"198.51.100.25"}},
		dnsfilter2test.Entry{Time: at(6), Client: "10.81.0.14", Name: "tracker.example", Type: "A", Reason: "FilteredBlackList"},
	)
	tech := &dnsnodetest.Fake{Token: "tech-lab-t0ken", Zone: time.FixedZone("+0530", 5*3600+1800),
		Apps: append(dnsnodetest.DefaultApps(), dnsnodetest.App{Name: "Query Logs (MySQL)", ClassPath: "QueryLogsMySql.App", QueryLogs: true})}
	tech.Add(dnsnodetest.Entry{Time: at(7), Client: "10.81.0.10", QName: "printer-cloud.example", QType: "AAAA", Answer: "2001:db8::25"})

	serveIn := func(addr string, h http.Handler) {
		var ln net.Listener
		if err := l.Do(lab.NodeDNS, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
			t.Fatalf("listen %s on the gateway: %v", addr, err)
		}
		s := httptest.NewUnstartedServer(h)
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		t.Cleanup(s.Close)
	}
	serveIn("10.81.0.1:80", pi)
	serveIn("10.81.0.1:3000", agh)
	serveIn("10.81.0.1:5380", tech)

	cfg := writeConfig(t, t.TempDir(), `networks: [10.81.0.0/24]
scan:
  source: sweep:lab
  devices:
    interval: 5s
    wait: 1s
plugins:
  dnsfilter1:
    pi:
      enabled: true
      host: 10.81.0.1
      password: pi-lab-s3cret
      timeout: 3s
  dnsfilter2:
    agh:
      enabled: true
      host: 10.81.0.1
      port: 3000
      user: inv
      password: agh-lab-s3cret
      timeout: 3s
  dnsnode:
    tech:
      enabled: true
      host: 10.81.0.1
      token: tech-lab-t0ken
      log_app: Query Logs (MySQL)
      timeout: 3s
`)
	// The MySQL app is the one read: its log is this one.
	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "lab", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	deviceAt := func(ip string) string {
		code, body := d.do(t, "GET", "/api/devices?q="+ip, tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			return ""
		}
		for _, dev := range page.Items {
			for _, ad := range dev.Addresses {
				if ad.IP == ip && ad.RetiredAt == nil {
					return dev.ID
				}
			}
		}
		return ""
	}
	lookups := func(id string) string {
		code, body := d.do(t, "GET", "/api/devices/"+id+"/dns?since="+hour.Format(time.RFC3339), tok, "", "")
		var page projections.Page[dns.Item]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			return fmt.Sprintf("HTTP %d %s", code, body)
		}
		var b strings.Builder
		for _, it := range page.Items {
			fmt.Fprintf(&b, "%s %d/%d %v;", it.Domain, it.Count, it.Blocked, it.Answers)
		}
		return b.String()
	}
	want := map[string]string{
		"10.81.0.10": "printer-cloud.example 2/0 [2001:db8::25];",
		"10.81.0.14": "mail.example 2/0 [198.51.100.25];tracker.example 2/2 [];",
	}
	for ip, w := range want {
		var got string
		if !eventually(90*time.Second, func() bool {
			id := deviceAt(ip)
			got = lookups(id)
			return id != "" && got == w
		}) {
			t.Fatalf("lookups of %s: %s\nwant %s\nlog:\n%s", ip, got, w, d.log)
		}
	}
	if pi.Sessions() != 0 && !eventually(10*time.Second, func() bool { return pi.Sessions() == 0 }) {
		t.Errorf("the Pi-hole holds %d sessions between reads", pi.Sessions())
	}
	if pi.Logins < 2 {
		t.Logf("Pi-hole reads so far: %d", pi.Logins)
	}

	// The spare host takes the address whose lookups no device held: they
	// become its own.
	l.Move(t, "spare", a("10.81.0.77"))
	var got string
	if !eventually(90*time.Second, func() bool {
		id := deviceAt("10.81.0.77")
		got = lookups(id)
		return id != "" && got == "later.example 1/0 [];"
	}) {
		t.Fatalf("lookups of the moved host: %s\nlog:\n%s", got, d.log)
	}
	for _, secret := range []string{"pi-lab-s3cret", "agh-lab-s3cret", "tech-lab-t0ken"} {
		if strings.Contains(d.log.String(), secret) {
			t.Errorf("the secret %q reached the log", secret)
		}
	}
}
