package rpcrouter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/rpcrouter"
	"github.com/jocasta/jocasta/sources/rpcrouter/rpcroutertest"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

// the ACL of the README's rpcd ACL file: exactly the calls made.
var readmeACL = map[string]bool{
	"system.board": true, "network.device.status": true, "luci-rpc.getDHCPLeases": true, "luci-rpc.getHostHints": true,
	"file.read": true, "iwinfo.devices": true, "iwinfo.info": true, "iwinfo.assoclist": true,
	"network.interface.dump": true,
}

// lab is an OpenWrt router with an access point radio, as the reference
// describes one, and its default route on wan.
func lab() *rpcroutertest.Fake {
	f := rpcroutertest.New("netinv", "s3cret")
	f.ACL = make(map[string]bool)
	for k, v := range readmeACL {
		f.ACL[k] = v
	}
	f.Reply("system.board", map[string]any{"hostname": "gw", "model": "GL.iNet GL-MT6000", "board_name": "glinet,gl-mt6000",
		"release": map[string]any{"distribution": "OpenWrt", "version": "24.10.2"}})
	f.Reply("network.device.status", map[string]any{
		"br-lan": map[string]any{"macaddr": "00:00:5e:00:53:a0", "up": true, "bridge-members": []string{"lan1", "lan2"}},
		"wan":    map[string]any{"macaddr": "00:00:5e:00:53:a1", "up": true},
		"lo":     map[string]any{"macaddr": "00:00:00:00:00:00"},
	})
	f.Reply("luci-rpc.getDHCPLeases", map[string]any{
		"dhcp_leases": []any{
			map[string]any{"expires": 3120, "hostname": "printer", "macaddr": "00:00:5E:00:53:11", "ipaddr": "192.0.2.50"},
			map[string]any{"expires": false, "macaddr": "00:00:5E:00:53:22", "ipaddr": "192.0.2.20"},
		},
		"dhcp6_leases": []any{
			map[string]any{"expires": 100, "hostname": "printer", "duid": "0001000128", "ip6addr": "2001:db8::50", "ip6addrs": []string{"2001:db8::50/128"}},
		},
	})
	f.Reply("luci-rpc.getHostHints", map[string]any{
		"00:00:5E:00:53:11": map[string]any{"ipaddrs": []string{"192.0.2.50"}, "ip6addrs": []string{"fe80::1", "2001:db8::50"}, "name": "printer"},
		"00:00:5E:00:53:22": map[string]any{"ipaddrs": []string{"192.0.2.20"}, "name": "nas"},
		"00:00:5E:00:53:44": map[string]any{"ipv4": "192.0.2.44", "name": "tv"}, // the older shape
	})
	f.Files[rpcrouter.ARPFile] = "IP address       HW type     Flags       HW address            Mask     Device\n" +
		"192.0.2.50       0x1         0x2         00:00:5e:00:53:11     *        br-lan\n" +
		"192.0.2.61       0x1         0x0         00:00:00:00:00:00     *        br-lan\n" +
		"192.0.2.62       0x1         0x2         00:00:00:00:00:00     *        br-lan\n" +
		"192.0.2.1        0x1         0x6         00:00:5e:00:53:99     *        br-lan\n" +
		"192.0.2.70       0x1         0x2         00:00:5e:00:53:33     *        br-lan\n"
	f.SetInterfaces(lo, lan, wan, wan6)
	f.Reply("iwinfo.devices", map[string]any{"devices": []string{"phy0-ap0", "phy1-ap0"}})
	f.Reply("iwinfo.info:phy0-ap0", map[string]any{"ssid": "lab", "frequency": 2437})
	f.Reply("iwinfo.info:phy1-ap0", map[string]any{"ssid": "lab5", "frequency": 5180})
	f.Reply("iwinfo.assoclist:phy0-ap0", map[string]any{"results": []any{}})
	f.Reply("iwinfo.assoclist:phy1-ap0", map[string]any{"results": []any{
		map[string]any{"mac": "00:00:5E:00:53:33", "signal": -61, "noise": -95, "inactive": 10, "connected_time": 300},
	}})
	return f
}

func serve(t *testing.T, f *rpcroutertest.Fake, mutate func(*rpcrouter.Config)) *rpcrouter.Reader {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return reader(t, ts.URL, mutate)
}

func reader(t *testing.T, raw string, mutate func(*rpcrouter.Config)) *rpcrouter.Reader {
	t.Helper()
	u, _ := url.Parse(raw)
	port, _ := strconv.Atoi(u.Port())
	var c rpcrouter.Config
	c.SetDefaults()
	c.Enabled, c.Host, c.Port, c.User, c.Password = true, u.Hostname(), port, "netinv", "s3cret"
	if mutate != nil {
		mutate(&c)
	}
	r, err := rpcrouter.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func hostLines(r *sources.HostRead) string {
	var out []string
	for _, h := range r.Hosts {
		var b strings.Builder
		fmt.Fprintf(&b, "%s ips=%v seen=%v", h.MAC, h.IPs, h.Seen)
		if len(h.Names) > 0 {
			fmt.Fprintf(&b, " names=%v", h.Names)
		}
		if h.Port != "" {
			fmt.Fprintf(&b, " port=%s wifi=%s/%s/%d", h.Port, h.SSID, h.Band, h.Signal)
		}
		out = append(out, b.String())
	}
	return strings.Join(out, "\n")
}

const wantLab = "00:00:5e:00:53:11 ips=[192.0.2.50 2001:db8::50] seen=true names=map[dhcp:printer]\n" +
	"00:00:5e:00:53:22 ips=[192.0.2.20] seen=false names=map[router:nas]\n" +
	"00:00:5e:00:53:33 ips=[192.0.2.70] seen=true port=phy1-ap0 wifi=lab5/5GHz/-61\n" +
	"00:00:5e:00:53:44 ips=[192.0.2.44] seen=false names=map[router:tv]\n" +
	"00:00:5e:00:53:99 ips=[192.0.2.1] seen=false"

func TestReadRouter(t *testing.T) {
	f := lab()
	res, err := serve(t, f, nil).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := res.(*sources.HostRead)
	if got := hostLines(read); got != wantLab {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, wantLab)
	}
	if !read.Complete || read.Peer.Name != "gw" || read.Peer.Model != "GL.iNet GL-MT6000" ||
		fmt.Sprint(read.Peer.MACs) != "[00:00:5e:00:53:a0 00:00:5e:00:53:a1]" || read.Peer.Outside != "203.0.113.7" {
		t.Errorf("complete %v peer %+v errors %v", read.Complete, read.Peer, read.Errors)
	}
	// Every call is one the README's ACL grants, none writes.
	for call := range f.Calls {
		if call != "session.login" && !readmeACL[call] {
			t.Errorf("call %s is not in the README's ACL", call)
		}
	}
}

// The session is kept across reads, and renewed once when it expires.
func TestSessionReuseAndExpiry(t *testing.T) {
	f := lab()
	r := serve(t, f, nil)
	for range 3 {
		if _, err := r.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.LoginCount(); n != 1 {
		t.Errorf("%d logins for 3 reads, want 1", n)
	}
	f.ExpireSessions()
	res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if n := f.LoginCount(); n != 2 {
		t.Errorf("%d logins after the session expired, want 2", n)
	}
	if got := hostLines(res.(*sources.HostRead)); got != wantLab {
		t.Errorf("after expiry:\n%s", got)
	}
}

func TestTopologyOnly(t *testing.T) {
	f := lab()
	res, err := serve(t, f, func(c *rpcrouter.Config) { c.TopologyOnly = true }).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"luci-rpc.getDHCPLeases", "luci-rpc.getHostHints", "file.read"} {
		if f.Count(call) != 0 {
			t.Errorf("topology_only made %s", call)
		}
	}
	if got, want := hostLines(res.(*sources.HostRead)), "00:00:5e:00:53:33 ips=[] seen=true port=phy1-ap0 wifi=lab5/5GHz/-61"; got != want {
		t.Errorf("got %s", got)
	}
	// The outside address is read on an access point too.
	if got := res.(*sources.HostRead).Peer.Outside; got != "203.0.113.7" {
		t.Errorf("outside %q", got)
	}
}

func TestBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *rpcroutertest.Fake)
		wantNil bool
		reason  string
	}{
		{"wrong password", func(f *rpcroutertest.Fake) { f.Password = "other" }, true, "session.login: refused (check user and password"},
		{"ACL without the ARP file", func(f *rpcroutertest.Fake) { delete(f.Files, rpcrouter.ARPFile) }, false,
			`file.read: permission denied (the login's ACL must grant it: see the rpcd ACL file in the README): add "/proc/net/arp" to the file scope of the ACL`},
		{"ACL without leases", func(f *rpcroutertest.Fake) { delete(f.ACL, "luci-rpc.getDHCPLeases") }, false,
			"luci-rpc.getDHCPLeases: JSON-RPC error -32002 Access denied (the login's ACL must grant it"},
		{"html", func(f *rpcroutertest.Fake) { f.Fault("luci-rpc.getHostHints", "html") }, false, "luci-rpc.getHostHints: the reply is text/html, not JSON"},
		{"http 500", func(f *rpcroutertest.Fake) { f.Fault("system.board", "http500") }, true, "system.board: HTTP 500"},
		{"truncated", func(f *rpcroutertest.Fake) { f.Fault("luci-rpc.getDHCPLeases", "truncated") }, false, "luci-rpc.getDHCPLeases: malformed reply: unexpected end of JSON input"},
		{"wrong type", func(f *rpcroutertest.Fake) { f.Reply("luci-rpc.getDHCPLeases", `raw:{"dhcp_leases":{"a":1}}`) }, false, "luci-rpc.getDHCPLeases: malformed reply: json: cannot unmarshal object"},
		{"status", func(f *rpcroutertest.Fake) { f.Fault("network.device.status", "status6") }, false, "network.device.status: permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			tc.setup(f)
			res, err := serve(t, f, nil).Poll(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q\nwant it to contain %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "other") {
				t.Errorf("a password in the reason: %q", err)
			}
			if tc.wantNil {
				if res != nil {
					t.Errorf("a result beside a failed read")
				}
				return
			}
			read := res.(*sources.HostRead)
			if read.Complete || len(read.Errors) != 1 || len(read.Hosts) == 0 {
				t.Errorf("partial read: complete %v errors %v hosts %d", read.Complete, read.Errors, len(read.Hosts))
			}
		})
	}
}

// A device without wireless has no iwinfo object: not an error. A reply
// with no data element ([0]) is read as empty.
func TestNoWirelessAndNoData(t *testing.T) {
	f := lab()
	delete(f.Replies, "iwinfo.devices")
	f.Fault("luci-rpc.getHostHints", "nodata")
	res, err := serve(t, f, nil).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := res.(*sources.HostRead)
	if !read.Complete || len(read.Hosts) != 4 {
		t.Errorf("complete %v hosts:\n%s", read.Complete, hostLines(read))
	}
}

func TestSlowAndDown(t *testing.T) {
	f := lab()
	f.Delay = time.Hour
	f.Fault("luci-rpc.getHostHints", "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := serve(t, f, nil).Poll(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || res.(*sources.HostRead).Complete {
		t.Errorf("slow: %v %v", res, err)
	}
	ts := httptest.NewServer(lab())
	addr := ts.URL
	ts.Close()
	if res, err := reader(t, addr, nil).Poll(context.Background()); res != nil || err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("down: %v %v", res, err)
	}
}

func TestConformance(t *testing.T) {
	start := func(f *rpcroutertest.Fake) string {
		ts := httptest.NewServer(f)
		t.Cleanup(ts.Close)
		return ts.URL
	}
	working := start(lab())
	failing := lab()
	failing.Password = "changed"
	failingURL := start(failing)
	hanging := lab()
	hanging.Delay = time.Hour
	hanging.Fault("system.board", "slow")
	hangingURL := start(hanging)
	sourcetest.TestPoller(t, sourcetest.Features{
		Kind:    "rpcrouter",
		Working: func(t *testing.T) sources.Poller { return reader(t, working, nil) },
		Failing: func(t *testing.T) sources.Poller { return reader(t, failingURL, nil) },
		Hanging: func(t *testing.T) sources.Poller { return reader(t, hangingURL, nil) },
	})
}
