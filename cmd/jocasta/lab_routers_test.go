package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
	"github.com/jocasta/jocasta/sources/rpcrouter/rpcroutertest"
)

// TestLabRouters runs serve in the lab's scanner namespace beside a fake
// RouterOS router (plain HTTP) and a fake OpenWrt access point (HTTPS with
// a self-signed certificate, topology only), both served from the lab's
// gateway node, whose tables list the lab's real hosts by their real MACs,
// a phone the sweep cannot find, and failed neighbour entries. It checks
// the exact inventory through the API (one device per MAC, names by
// source, attachments, the scan log), then breaks the router's
// credentials and checks that the phone it alone saw stays online, marked
// not covered, with the reason in the scan log and no password anywhere.
func TestLabRouters(t *testing.T) {
	if testing.Short() && !inCI() {
		t.Skip("lab test: skipped with -short outside CI")
	}
	a := netip.MustParseAddr
	l := lab.New(t, lab.Spec{
		Prefix:  netip.MustParsePrefix("10.79.0.0/24"),
		Scanner: a("10.79.0.2"),
		DNS:     a("10.79.0.1"), // the gateway: DNS, and the routers' API
		Hosts: []lab.HostSpec{
			{Name: "printer", IP: a("10.79.0.10"), MDNSName: "printer-kitchen"},
			{Name: "laptop", IP: a("10.79.0.14"), NetBIOS: "LAPTOP-LAB"},
			{Name: "quiet", IP: a("10.79.0.13"), DropICMP: true, MAC: "02:42:0a:4f:00:0d"},
		},
	})
	if !l.InScanner(t) {
		return
	}
	mac := func(node string) string { return l.MAC(node).String() }
	const phone = "3c:22:fb:00:00:40"
	up := strings.ToUpper

	// The router: DHCP server and gateway, its own bridge ports.
	ros := routerapitest.New("inv", "s3cret-ros")
	ros.Identity = "core"
	ros.Set("interface", []routerapitest.Row{{"name": "bridge", "mac-address": up(mac("dns"))}})
	ros.Set("ip/dhcp-server/lease", []routerapitest.Row{
		{"address": "10.79.0.10", "mac-address": up(mac("printer")), "host-name": "printer-dhcp", "status": "bound", "last-seen": "40s"},
		{"address": "10.79.0.13", "mac-address": up(mac("quiet")), "host-name": "quiet-dhcp", "status": "bound", "last-seen": "1m"},
		{"address": "10.79.0.40", "mac-address": up(phone), "host-name": "phone", "status": "bound", "last-seen": "5s"},
	})
	ros.Set("ip/arp", []routerapitest.Row{
		{"address": "10.79.0.10", "mac-address": up(mac("printer")), "interface": "bridge", "status": "reachable", "complete": "true"},
		{"address": "10.79.0.13", "mac-address": up(mac("quiet")), "interface": "bridge", "status": "reachable", "complete": "true"},
		{"address": "10.79.0.40", "mac-address": up(phone), "interface": "bridge", "status": "reachable", "complete": "true"},
		{"address": "10.79.0.99", "interface": "bridge", "status": "failed"},
		{"address": "10.79.0.98", "mac-address": "00:00:00:00:00:00", "interface": "bridge", "status": "incomplete"},
	})
	ros.Set("interface/bridge/host", []routerapitest.Row{
		{"mac-address": up(mac("dns")), "on-interface": "bridge", "local": "true"},
		{"mac-address": up(mac("printer")), "on-interface": "ether2", "local": "false"},
		{"mac-address": up(mac("quiet")), "on-interface": "ether3", "local": "false"},
	})
	ros.Set("interface/wifi/registration-table", []routerapitest.Row{
		{"interface": "wifi1", "ssid": "home", "mac-address": up(phone), "signal": "-52", "band": "5ghz-ax"},
	})

	// The access point: only what hangs off it.
	ap := rpcroutertest.New("netinv", "s3cret-ap")
	ap.Reply("system.board", map[string]any{"hostname": "ap-attic", "model": "Fake AP"})
	ap.Reply("network.device.status", map[string]any{"br-lan": map[string]any{"macaddr": "02:00:00:00:0a:01"}})
	ap.Reply("iwinfo.devices", map[string]any{"devices": []string{"phy0-ap0"}})
	ap.Reply("iwinfo.info:phy0-ap0", map[string]any{"ssid": "attic", "frequency": 2437})
	ap.Reply("iwinfo.assoclist:phy0-ap0", map[string]any{"results": []any{map[string]any{"mac": up(mac("laptop")), "signal": -67}}})

	serveIn := func(addr string, h http.Handler, tls bool) {
		var ln net.Listener
		if err := l.Do(lab.NodeDNS, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
			t.Fatalf("listen %s on the gateway: %v", addr, err)
		}
		s := httptest.NewUnstartedServer(h)
		s.Listener.Close()
		s.Listener = ln
		if tls {
			s.StartTLS()
		} else {
			s.Start()
		}
		t.Cleanup(s.Close)
	}
	serveIn("10.79.0.1:80", ros, false)
	serveIn("10.79.0.1:8443", ap, true)

	cfg := writeConfig(t, t.TempDir(), `networks: [10.79.0.0/24]
inventory:
  online_window: 20s
scan:
  source: sweep:lab
  devices:
    interval: 6s
    wait: 1s
plugins:
  routerapi:
    core:
      enabled: true
      host: 10.79.0.1
      user: inv
      password: s3cret-ros
      timeout: 3s
  rpcrouter:
    ap:
      enabled: true
      host: 10.79.0.1
      port: 8443
      ssl: true
      insecure: true
      user: netinv
      password: s3cret-ap
      topology_only: true
      timeout: 3s
`)
	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "lab", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	devices := func() []projections.Device {
		code, body := d.do(t, "GET", "/api/devices?limit=1000", tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("devices: %d %s", code, body)
		}
		return page.Items
	}
	// line renders what the test checks of a device.
	line := func(dev projections.Device, ids map[string]string) string {
		var b strings.Builder
		m := ""
		if dev.MAC != nil {
			m = *dev.MAC
		}
		var ips []string
		for _, ad := range dev.Addresses {
			if ad.RetiredAt == nil {
				ips = append(ips, ad.IP)
			}
		}
		sort.Strings(ips)
		var names []string
		for src, n := range dev.Names {
			names = append(names, src+"="+n.Name)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%s %v %v", m, ips, names)
		if at := dev.AttachedTo; at != nil {
			dev := "-"
			if at.DeviceID != nil {
				dev = ids[*at.DeviceID]
			}
			fmt.Fprintf(&b, " at %s/%s/%s/%s/%s", dev, at.Source, at.Port, at.SSID, at.Band)
		}
		return b.String()
	}
	want := []string{
		fmt.Sprintf("%s [10.79.0.1] []", mac("dns")),
		fmt.Sprintf("%s [10.79.0.10] [dhcp=printer-dhcp mdns=printer-kitchen.local] at %s/routerapi:core/ether2//", mac("printer"), mac("dns")),
		fmt.Sprintf("%s [10.79.0.13] [dhcp=quiet-dhcp] at %s/routerapi:core/ether3//", mac("quiet"), mac("dns")),
		fmt.Sprintf("%s [10.79.0.14] [netbios=LAPTOP-LAB] at -/rpcrouter:ap/phy0-ap0/attic/2.4GHz", mac("laptop")),
		fmt.Sprintf("%s [10.79.0.2] []", mac("scanner")),
		fmt.Sprintf("%s [10.79.0.40] [dhcp=phone] at %s/routerapi:core/wifi1/home/5ghz-ax", phone, mac("dns")),
	}
	sort.Strings(want)
	var last string
	var byMAC map[string]projections.Device
	if !eventually(90*time.Second, func() bool {
		devs := devices()
		ids := map[string]string{}
		byMAC = map[string]projections.Device{}
		for _, dev := range devs {
			if dev.MAC != nil {
				ids[dev.ID] = *dev.MAC
				byMAC[*dev.MAC] = dev
			}
		}
		var got []string
		for _, dev := range devs {
			got = append(got, line(dev, ids))
		}
		sort.Strings(got)
		last = cmp.Diff(want, got)
		return last == ""
	}) {
		t.Fatalf("inventory never matched the lab and its routers (-want +got):\n%s\nlog:\n%s", last, d.log)
	}
	if p := byMAC[phone]; p.Presence != projections.PresenceOnline || !slices.Contains(p.Sources, "routerapi:core") || slices.Contains(p.Sources, "sweep:lab") {
		t.Errorf("phone: %s %v", p.Presence, p.Sources)
	}
	_, scans := d.do(t, "GET", "/api/scans?source=routerapi:core&limit=1", tok, "", "")
	if !strings.Contains(string(scans), `"kind":"routerapi"`) || !strings.Contains(string(scans), `"complete":true`) || !strings.Contains(string(scans), `"rows":`) {
		t.Errorf("router scan log: %s", scans)
	}
	if ros.Writes() != 0 {
		t.Errorf("the router received %d requests other than GET", ros.Writes())
	}

	// The router's password changes: its reads fail. The phone, which only
	// the router saw, passes the online window without going offline.
	ros.Fault("system/identity", "401")
	var phoneDev projections.Device
	if !eventually(90*time.Second, func() bool {
		code, body := d.do(t, "GET", "/api/devices/"+byMAC[phone].ID, tok, "", "")
		phoneDev = projections.Device{}
		return code == 200 && json.Unmarshal(body, &phoneDev) == nil && phoneDev.Coverage != nil
	}) {
		t.Fatalf("the phone was never marked not covered: %+v\n%s", phoneDev, d.log)
	}
	if phoneDev.Presence != projections.PresenceOnline || phoneDev.Coverage.Source != "routerapi:core" || !strings.Contains(phoneDev.Coverage.Reason, "401") {
		t.Errorf("phone: %s coverage %+v", phoneDev.Presence, phoneDev.Coverage)
	}
	// The laptop answers the sweep: still covered, still online.
	code, body := d.do(t, "GET", "/api/devices/"+byMAC[mac("laptop")].ID, tok, "", "")
	if code != 200 || !strings.Contains(string(body), `"coverage":null`) || !strings.Contains(string(body), `"presence":"online"`) {
		t.Errorf("laptop: %s", body)
	}
	_, scans = d.do(t, "GET", "/api/scans?source=routerapi:core&limit=1", tok, "", "")
	if !strings.Contains(string(scans), "HTTP 401 Unauthorized") {
		t.Errorf("router failure not in the scan log: %s", scans)
	}
	for _, secret := range []string{"s3cret-ros", "s3cret-ap"} {
		if strings.Contains(d.log.String(), secret) || strings.Contains(string(scans), secret) {
			t.Errorf("the secret %q reached the log or the API", secret)
		}
	}
}
