package routerapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/routerapi"
	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
)

type R = routerapitest.Row

// lab is a router as the reference describes one: a DHCP server, ARP
// with a failed and an incomplete entry, IPv6 neighbours, a bridge with
// its own ports, the wifi package's registration table, and a default
// route via ether1.
func lab() *routerapitest.Fake {
	f := routerapitest.New("inv", "s3cret")
	f.Set("ip/dhcp-server/lease", []R{
		{"address": "192.0.2.50", "mac-address": "00:00:5E:00:53:11", "host-name": "printer", "status": "bound", "last-seen": "1m9s", "dynamic": "true"},
		{"address": "192.0.2.20", "mac-address": "00:00:5E:00:53:22", "status": "waiting", "last-seen": "never", "dynamic": "false", "comment": "nas in the attic"},
		{"address": "192.0.2.21", "mac-address": "00:00:5E:00:53:23", "status": "bound", "last-seen": "2h", "host-name": "old-laptop"},
		{"address": "192.0.2.22", "mac-address": "00:00:5E:00:53:24", "disabled": "true", "host-name": "off"},
	})
	f.Set("ip/arp", []R{
		{"address": "192.0.2.50", "mac-address": "00:00:5E:00:53:11", "interface": "bridge", "status": "reachable", "complete": "true", "dynamic": "true"},
		{"address": "192.0.2.60", "mac-address": "00:00:5E:00:53:33", "interface": "bridge", "status": "stale", "complete": "true", "dynamic": "true"},
		{"address": "192.0.2.61", "interface": "bridge", "status": "failed", "dynamic": "true"},
		{"address": "192.0.2.62", "mac-address": "00:00:00:00:00:00", "interface": "bridge", "status": "incomplete"},
		{"address": "192.0.2.63", "mac-address": "00:00:5E:00:53:44", "interface": "bridge", "status": "failed"},
		{"address": "198.51.100.9", "mac-address": "00:00:5E:00:53:55", "interface": "vlan20", "status": "delay", "complete": "true"},
	})
	f.Set("ipv6/neighbor", []R{
		{"address": "fe80::200:5eff:fe00:5311", "mac-address": "00:00:5E:00:53:11", "interface": "bridge", "status": "reachable"},
		{"address": "2001:db8::50", "mac-address": "00:00:5E:00:53:11", "interface": "bridge", "status": "stale"},
		{"address": "2001:db8::99", "interface": "bridge", "status": "failed"},
	})
	f.Set("interface", []R{{"name": "ether1", "mac-address": "00:00:5E:00:53:01"}, {"name": "bridge", "mac-address": "00:00:5E:00:53:02"}, {"name": "lo", "mac-address": "00:00:00:00:00:00"}})
	f.Set("interface/bridge/host", []R{
		{"mac-address": "00:00:5E:00:53:02", "on-interface": "bridge", "bridge": "bridge", "local": "true"},
		{"mac-address": "00:00:5E:00:53:11", "on-interface": "ether3", "bridge": "bridge", "vid": "10", "local": "false", "dynamic": "true"},
		{"mac-address": "00:00:5E:00:53:66", "on-interface": "ether4", "bridge": "bridge", "local": "false", "dynamic": "true", "invalid": "true"},
	})
	f.Set("interface/wifi/registration-table", []R{
		{"interface": "wifi1", "ssid": "lab", "mac-address": "00:00:5E:00:53:33", "uptime": "2h4m", "last-activity": "1s", "signal": "-58", "band": "5ghz-ax", "authorized": "true"},
	})
	f.Set("ip/route", []R{
		{"dst-address": "192.0.2.0/24", "gateway": "bridge", "immediate-gw": "bridge", "routing-table": "main", "active": "true", "disabled": "false", "dynamic": "true", "connect": "true"},
		{"dst-address": "0.0.0.0/0", "gateway": "203.0.113.1", "immediate-gw": "203.0.113.1%ether1", "routing-table": "main", "active": "true", "disabled": "false", "dynamic": "true", "dhcp": "true"},
	})
	f.Set("ip/address", []R{
		{"address": "192.0.2.1/24", "network": "192.0.2.0", "interface": "bridge", "disabled": "false", "invalid": "false"},
		{"address": "203.0.113.7/24", "network": "203.0.113.0", "interface": "ether1", "disabled": "false", "invalid": "false", "dynamic": "true"},
	})
	return f
}

func serve(t *testing.T, f *routerapitest.Fake, mutate func(*routerapi.Config)) *routerapi.Reader {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return reader(t, ts.URL, mutate)
}

func reader(t *testing.T, raw string, mutate func(*routerapi.Config)) *routerapi.Reader {
	t.Helper()
	u, _ := url.Parse(raw)
	port, _ := strconv.Atoi(u.Port())
	var c routerapi.Config
	c.SetDefaults()
	c.Enabled, c.Host, c.Port, c.User, c.Password = true, u.Hostname(), port, "inv", "s3cret"
	if mutate != nil {
		mutate(&c)
	}
	r, err := routerapi.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hostLine renders a host for comparison.
func hostLine(h *sources.ReadHost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s ips=%v seen=%v", h.MAC, h.IPs, h.Seen)
	if len(h.Names) > 0 {
		fmt.Fprintf(&b, " names=%v", h.Names)
	}
	if h.Port != "" {
		fmt.Fprintf(&b, " port=%s", h.Port)
	}
	if h.SSID != "" || h.Band != "" || h.Signal != 0 {
		fmt.Fprintf(&b, " wifi=%s/%s/%d", h.SSID, h.Band, h.Signal)
	}
	return b.String()
}

func hostLines(r *sources.HostRead) string {
	var out []string
	for _, h := range r.Hosts {
		out = append(out, hostLine(h))
	}
	return strings.Join(out, "\n")
}

func TestReadRouter(t *testing.T) {
	f := lab()
	r := serve(t, f, nil)
	res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := res.(*sources.HostRead)
	want := strings.Join([]string{
		"00:00:5e:00:53:11 ips=[192.0.2.50 2001:db8::50] seen=true names=map[dhcp:printer] port=ether3",
		"00:00:5e:00:53:22 ips=[192.0.2.20] seen=false names=map[router:nas in the attic]",
		"00:00:5e:00:53:23 ips=[192.0.2.21] seen=false names=map[dhcp:old-laptop]",
		"00:00:5e:00:53:33 ips=[192.0.2.60] seen=true port=wifi1 wifi=lab/5ghz-ax/-58",
		"00:00:5e:00:53:55 ips=[198.51.100.9] seen=true",
	}, "\n")
	if got := hostLines(read); got != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}
	if !read.Complete || len(read.Errors) != 0 {
		t.Errorf("complete %v errors %v", read.Complete, read.Errors)
	}
	if read.Peer.Name != "core" || read.Peer.Model != "CCR2004" || fmt.Sprint(read.Peer.MACs) != "[00:00:5e:00:53:01 00:00:5e:00:53:02]" ||
		read.Peer.Outside != "203.0.113.7" {
		t.Errorf("peer %+v", read.Peer)
	}
	if read.Rows != 4+6+3+3+3+1 {
		t.Errorf("rows %d", read.Rows)
	}
	if f.Writes() != 0 {
		t.Errorf("%d requests other than GET", f.Writes())
	}
	// The other wireless packages are not installed: asked once each, no error.
	if f.Count("GET", "/rest/interface/wireless/registration-table") != 1 {
		t.Error("legacy wireless table not probed")
	}
}

func TestWirelessVariants(t *testing.T) {
	for _, tc := range []struct {
		menu string
		row  R
		want string
	}{
		{"interface/wireless/registration-table", R{"interface": "wlan1", "mac-address": "00:00:5E:00:53:77", "signal-strength": "-62@6Mbps", "last-ip": "192.0.2.77"},
			"00:00:5e:00:53:77 ips=[192.0.2.77] seen=true port=wlan1 wifi=//-62"},
		{"interface/wifiwave2/registration-table", R{"interface": "wifi2", "ssid": "guest", "mac-address": "00:00:5E:00:53:78", "signal": "-71", "band": "2ghz-n"},
			"00:00:5e:00:53:78 ips=[] seen=true port=wifi2 wifi=guest/2ghz-n/-71"},
		{"caps-man/registration-table", R{"interface": "cap3", "ssid": "office", "mac-address": "00:00:5E:00:53:79", "signal-strength": "-55"},
			"00:00:5e:00:53:79 ips=[] seen=true port=cap3 wifi=office//-55"},
	} {
		t.Run(tc.menu, func(t *testing.T) {
			f := routerapitest.New("inv", "s3cret")
			f.Set("interface", nil)
			f.Set("ip/dhcp-server/lease", nil)
			f.Set("ip/arp", nil)
			f.Set("interface/bridge/host", nil)
			f.Set(tc.menu, []R{tc.row})
			res, err := serve(t, f, nil).Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			read := res.(*sources.HostRead)
			if got := hostLines(read); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
			if !read.Complete {
				t.Errorf("a router without ipv6 or other wireless packages read as incomplete: %v", read.Errors)
			}
		})
	}
}

func TestTopologyOnly(t *testing.T) {
	f := lab()
	res, err := serve(t, f, func(c *routerapi.Config) { c.TopologyOnly = true }).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, menu := range []string{"ip/dhcp-server/lease", "ip/arp", "ipv6/neighbor"} {
		if n := f.Count("GET", "/rest/"+menu); n != 0 {
			t.Errorf("topology_only read %s %d times", menu, n)
		}
	}
	want := "00:00:5e:00:53:11 ips=[] seen=true port=ether3\n00:00:5e:00:53:33 ips=[] seen=true port=wifi1 wifi=lab/5ghz-ax/-58"
	if got := hostLines(res.(*sources.HostRead)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The outside address is read on a switch or access point too.
	if got := res.(*sources.HostRead).Peer.Outside; got != "203.0.113.7" {
		t.Errorf("outside %q", got)
	}
}

// Numbers and booleans as JSON numbers and booleans read as the strings
// RouterOS normally sends.
func TestNumbersAsNumbers(t *testing.T) {
	f := lab()
	for _, m := range []string{"ip/arp", "interface/wifi/registration-table", "interface/bridge/host"} {
		f.Fault(m, "numbers")
	}
	res, err := serve(t, f, nil).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := serve(t, lab(), nil).Poll(context.Background())
	if got, w := hostLines(res.(*sources.HostRead)), hostLines(want.(*sources.HostRead)); got != w {
		t.Errorf("typed values read differently:\n%s\nwant\n%s", got, w)
	}
}

func TestBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name, menu, fault string
		// wantNil: the whole read fails (scan.failed); else a partial read.
		wantNil bool
		reason  string
	}{
		{"wrong password", "system/identity", "401", true, "HTTP 401 Unauthorized (check user and password"},
		{"policy", "ip/arp", "500-policy", false, "ip/arp: HTTP 500 Internal Server Error: std failure: not allowed (9) (the user's group needs"},
		{"html page", "ip/dhcp-server/lease", "html", false, "ip/dhcp-server/lease: the reply is text/html, not JSON"},
		{"truncated", "ip/arp", "truncated", false, "ip/arp: malformed reply: unexpected EOF"},
		{"object for a list", "interface/bridge/host", "object", false, "interface/bridge/host: malformed reply: json: cannot unmarshal object"},
		{"garbage", "ip/arp", "garbage", false, "ip/arp: malformed reply: invalid character"},
		{"html identity", "system/identity", "html", true, "system/identity: the reply is text/html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			f.Fault(tc.menu, tc.fault)
			res, err := serve(t, f, nil).Poll(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q, want it to contain %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password is in the reason: %q", err)
			}
			if tc.wantNil {
				if res != nil {
					t.Errorf("a result beside a failed read: %+v", res)
				}
				return
			}
			read := res.(*sources.HostRead)
			if read.Complete || len(read.Errors) != 1 {
				t.Errorf("partial read: complete %v errors %v", read.Complete, read.Errors)
			}
			if len(read.Hosts) == 0 {
				t.Error("the tables that were read are lost")
			}
		})
	}
}

func TestUnreachableAndSlow(t *testing.T) {
	ts := httptest.NewServer(lab())
	addr := ts.URL
	ts.Close()
	if res, err := reader(t, addr, nil).Poll(context.Background()); res != nil || err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("down: %v %v", res, err)
	}

	f := lab()
	f.Delay = 10 * time.Second
	f.Fault("ip/arp", "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := serve(t, f, nil).Poll(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow: %v", err)
	}
	if read, _ := res.(*sources.HostRead); read == nil || read.Complete {
		t.Errorf("slow read: %+v", res)
	}
}

func TestTLS(t *testing.T) {
	ts := httptest.NewTLSServer(lab())
	defer ts.Close()
	_, err := reader(t, ts.URL, func(c *routerapi.Config) { c.SSL = true }).Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "insecure: true") {
		t.Errorf("self-signed without insecure: %v", err)
	}
	res, err := reader(t, ts.URL, func(c *routerapi.Config) { c.SSL, c.Insecure = true, true }).Poll(context.Background())
	if err != nil || len(res.(*sources.HostRead).Hosts) != 5 {
		t.Errorf("insecure: %v", err)
	}
	// ssl to a plain port.
	plain := httptest.NewServer(lab())
	defer plain.Close()
	if _, err := reader(t, plain.URL, func(c *routerapi.Config) { c.SSL = true }).Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("https to http: %v", err)
	}
}

func TestHugeTable(t *testing.T) {
	f := lab()
	rows := make([]R, 0, 20000)
	for i := range 20000 {
		rows = append(rows, R{"address": netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String(),
			"mac-address": fmt.Sprintf("02:00:00:%02X:%02X:%02X", i>>16, (i>>8)&0xff, i&0xff), "status": "reachable", "complete": "true",
			"comment": strings.Repeat("x", 1700)})
	}
	f.Set("ip/arp", rows)
	res, err := serve(t, f, nil).Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ip/arp: reply larger than 32 MiB: refused") {
		t.Fatalf("huge: %v", err)
	}
	if res.(*sources.HostRead).Complete {
		t.Error("complete")
	}
}
