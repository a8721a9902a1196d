package main

import (
	"encoding/json"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources/lab"
)

// labSpec is the lab of the end-to-end test: each host is named by a
// different resolver, one drops ICMP, one has a locally administered MAC,
// one moves.
func labSpec() lab.Spec {
	a := netip.MustParseAddr
	return lab.Spec{
		Prefix:  netip.MustParsePrefix("10.78.0.0/24"),
		Scanner: a("10.78.0.2"),
		DNS:     a("10.78.0.3"),
		Hosts: []lab.HostSpec{
			{Name: "printer", IP: a("10.78.0.10"), MDNSName: "printer-kitchen",
				DNSSD: &lab.Service{Type: "_http._tcp", Name: "Kitchen Printer", Port: 8080}, TCPPorts: []int{80, 631, 8080}},
			{Name: "nas", IP: a("10.78.0.11"), DNSName: "nas.lab", MDNSName: "nas", NetBIOS: "NAS01",
				DNSSD: &lab.Service{Type: "_smb._tcp", Name: "Family NAS", Port: 445}, TCPPorts: []int{22, 445}},
			{Name: "tv", IP: a("10.78.0.12"), UPnP: "Living Room TV"},
			{Name: "quiet", IP: a("10.78.0.13"), DropICMP: true, MAC: "02:42:0a:4e:00:0d", DNSName: "quiet.lab", TCPPorts: []int{22}},
			{Name: "laptop", IP: a("10.78.0.14"), NetBIOS: "LAPTOP-LAB"},
			{Name: "mystery", IP: a("10.78.0.15"), TCPPorts: []int{9100}},
		},
	}
}

type labDevice struct {
	mac      string
	random   bool
	names    map[string]string
	ports    []uint16
	services []projections.Service
}

// TestLabServe runs jocasta serve inside the lab's scanner namespace and
// checks the exact inventory through the API: every host, its MAC, each
// name by source, services, ports, presence, then an address change and
// the old address's retirement after inventory.address_grace.
func TestLabServe(t *testing.T) {
	if testing.Short() && !inCI() {
		t.Skip("lab test: skipped with -short outside CI")
	}
	l := lab.New(t, labSpec())
	if !l.InScanner(t) {
		return
	}
	const grace = 25 * time.Second
	cfg := writeConfig(t, t.TempDir(), `networks: [10.78.0.0/24]
inventory:
  address_grace: 25s
scan:
  source: sweep:lab
  devices:
    interval: 8s
    wait: 1s
  ports:
    enabled: true
    interval: 8s
    custom: "22,80,445,631,9100"
`)
	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "lab", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)

	mac := func(node string) string { return l.MAC(node).String() }
	want := map[string]labDevice{
		"10.78.0.2":  {mac: mac("scanner")},
		"10.78.0.3":  {mac: mac("dns")},
		"10.78.0.10": {mac: mac("printer"), names: map[string]string{"mdns": "printer-kitchen.local"}, ports: []uint16{80, 631, 8080}, services: []projections.Service{{Instance: "Kitchen Printer", Type: "_http._tcp", Port: 8080}}},
		"10.78.0.11": {mac: mac("nas"), names: map[string]string{"dns": "nas.lab"}, ports: []uint16{22, 445}, services: []projections.Service{{Instance: "Family NAS", Type: "_smb._tcp", Port: 445}}},
		"10.78.0.12": {mac: mac("tv"), names: map[string]string{"ssdp": "Living Room TV"}},
		"10.78.0.13": {mac: "02:42:0a:4e:00:0d", random: true, names: map[string]string{"dns": "quiet.lab"}, ports: []uint16{22}},
		"10.78.0.14": {mac: mac("laptop"), names: map[string]string{"netbios": "LAPTOP-LAB"}},
		"10.78.0.15": {mac: mac("mystery"), ports: []uint16{9100}},
	}
	devices := func() map[string]projections.Device {
		code, body := d.do(t, "GET", "/api/devices?limit=1000", tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("devices: %d %s", code, body)
		}
		byIP := map[string]projections.Device{}
		for _, dev := range page.Items {
			for _, a := range dev.Addresses {
				if a.RetiredAt == nil {
					byIP[a.IP] = dev
				}
			}
		}
		return byIP
	}
	got := func(dev projections.Device) labDevice {
		g := labDevice{random: dev.MACRandom, ports: []uint16{}}
		if dev.MAC != nil {
			g.mac = *dev.MAC
		}
		for src, n := range dev.Names {
			if g.names == nil {
				g.names = map[string]string{}
			}
			g.names[src] = n.Name
		}
		for _, p := range dev.Ports {
			g.ports = append(g.ports, p.Port)
		}
		g.services = dev.Services
		if len(g.services) == 0 {
			g.services = nil
		}
		return g
	}
	for ip, w := range want {
		if w.ports == nil {
			w.ports = []uint16{}
			want[ip] = w
		}
	}
	// Wait for a sweep and a port scan that saw everything, then compare.
	var last string
	if !eventually(90*time.Second, func() bool {
		byIP := devices()
		gotAll := map[string]labDevice{}
		for ip, dev := range byIP {
			gotAll[ip] = got(dev)
		}
		last = cmp.Diff(want, gotAll, cmp.AllowUnexported(labDevice{}))
		return last == ""
	}) {
		t.Fatalf("inventory never matched the lab (-want +got):\n%s\nlog:\n%s", last, d.log)
	}
	byIP := devices()
	for ip, dev := range byIP {
		if dev.Presence != projections.PresenceOnline {
			t.Errorf("%s presence %s", ip, dev.Presence)
		}
		if !slices.Contains(dev.Sources, "sweep:lab") {
			t.Errorf("%s sources %v", ip, dev.Sources)
		}
	}
	if v := byIP["10.78.0.13"].Vendor; v != nil {
		t.Errorf("a locally administered MAC has vendor %q", *v)
	}
	_, scans := d.do(t, "GET", "/api/scans?limit=5", tok, "", "")
	if !strings.Contains(string(scans), `"kind":"devices"`) || !strings.Contains(string(scans), `"kind":"ports"`) || !strings.Contains(string(scans), `"networks":["10.78.0.0/24"]`) {
		t.Errorf("scan log: %s", scans)
	}

	// The laptop moves: the same device answers at a new address; the old
	// one is retired only once it has been unseen for longer than the grace.
	laptopID := byIP["10.78.0.14"].ID
	l.Move(t, "laptop", netip.MustParseAddr("10.78.0.114"))
	moved := time.Now()
	var laptop projections.Device
	if !eventually(60*time.Second, func() bool {
		code, body := d.do(t, "GET", "/api/devices/"+laptopID, tok, "", "")
		laptop = projections.Device{}
		return code == 200 && json.Unmarshal(body, &laptop) == nil && hasAddress(laptop, "10.78.0.114")
	}) {
		t.Fatalf("the moved laptop was not seen at its new address: %+v\n%s", laptop, d.log)
	}
	if time.Since(moved) < grace {
		for _, a := range laptop.Addresses {
			if a.IP == "10.78.0.14" && a.RetiredAt != nil {
				t.Fatalf("old address retired before the grace passed: %+v", a)
			}
		}
	}
	if !eventually(90*time.Second, func() bool {
		code, body := d.do(t, "GET", "/api/devices/"+laptopID, tok, "", "")
		laptop = projections.Device{}
		if code != 200 || json.Unmarshal(body, &laptop) != nil {
			return false
		}
		for _, a := range laptop.Addresses {
			if a.IP == "10.78.0.14" && a.RetiredAt != nil {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("old address never retired: %+v", laptop.Addresses)
	}
	for _, a := range laptop.Addresses {
		if a.IP == "10.78.0.14" && a.RetiredAt.Sub(a.LastSeen) < grace {
			t.Errorf("retired %s after only %s unseen", a.IP, a.RetiredAt.Sub(a.LastSeen))
		}
	}
	_, evs := d.do(t, "GET", "/api/devices/"+laptopID+"/events", tok, "", "")
	var page projections.Page[projections.ChangeEntry]
	json.Unmarshal(evs, &page)
	var kinds []string
	for _, e := range page.Items {
		kinds = append(kinds, e.Kind)
	}
	sort.Strings(kinds)
	for _, k := range []string{projections.ChangeDiscovered, projections.ChangeAddressAdded, projections.ChangeAddressRetired} {
		if !slices.Contains(kinds, k) {
			t.Errorf("laptop change log lacks %s: %v", k, kinds)
		}
	}
	if n := len(devices()); n != len(want) {
		t.Errorf("%d current addresses after the move, want %d (the move must not make a new device)", n, len(want))
	}
}

func hasAddress(d projections.Device, ip string) bool {
	for _, a := range d.Addresses {
		if a.IP == ip && a.RetiredAt == nil {
			return true
		}
	}
	return false
}

func eventually(limit time.Duration, f func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}
