package main

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/sources/flowlistener/flowgen"
	"github.com/jocasta/jocasta/sources/flowlistener/flowtest"
	"github.com/jocasta/jocasta/sources/lab"
)

// TestLabFlows runs serve with a flowlistener in the lab's scanner
// namespace and two real exporters on other nodes: softflowd on the
// gateway exporting one packet capture as NetFlow v9, and nfdump's
// nfreplay on a second router replaying another (through nfpcapd's file
// of it). The captures are the lab's hosts talking to a few Internet
// peers, and one conversation appears in both. The test checks the
// hourly totals through the API: each device's traffic by peer, exactly
// as written into the captures (IP bytes and packets per direction),
// and the overview's devices, peers and total.
func TestLabFlows(t *testing.T) {
	if testing.Short() && !inCI() {
		t.Skip("lab test: skipped with -short outside CI")
	}
	a := netip.MustParseAddr
	printer, laptop, edge := a("10.80.0.10"), a("10.80.0.11"), a("10.80.0.5")
	l := lab.New(t, lab.Spec{
		Prefix:  netip.MustParsePrefix("10.80.0.0/24"),
		Scanner: a("10.80.0.2"),
		DNS:     a("10.80.0.1"), // the gateway: softflowd exports from here
		Hosts: []lab.HostSpec{
			{Name: "printer", IP: printer},
			{Name: "laptop", IP: laptop},
			{Name: "edge", IP: edge}, // a second router: nfreplay
		},
	})
	if !l.InScanner(t) {
		return
	}
	flowtest.Require(t, "softflowd", "softflowctl", "nfpcapd", "nfreplay")
	cloudflare, google, quad9 := a("1.1.1.1"), a("8.8.8.8"), a("9.9.9.9")
	viaGateway := []flowgen.Conv{
		{A: printer, B: cloudflare, Proto: 6, APort: 41000, BPort: 443, Packets: 20, PayloadAB: 200, PayloadBA: 1400},
		{A: laptop, B: google, Proto: 17, APort: 50000, BPort: 53, Packets: 5, PayloadAB: 40, PayloadBA: 200},
	}
	viaEdge := []flowgen.Conv{
		{A: laptop, B: google, Proto: 17, APort: 50001, BPort: 53, Packets: 3, PayloadAB: 35, PayloadBA: 90},
		{A: laptop, B: quad9, Proto: 6, APort: 42000, BPort: 443, Packets: 8, PayloadAB: 100, PayloadBA: 900},
		{A: printer, B: quad9, Proto: 17, APort: 6000, BPort: 6000, Packets: 4, PayloadAB: 500, PayloadBA: -1},
	}
	// want: each device's totals by peer, from the device's side.
	type key struct{ dev, peer netip.Addr }
	want := map[key]traffic.Totals{}
	for _, c := range append(append([]flowgen.Conv(nil), viaGateway...), viaEdge...) {
		w := want[key{c.A, c.B}]
		w.BytesOut += c.BytesAB()
		w.PacketsOut += uint64(c.Packets)
		w.BytesIn += c.BytesBA()
		w.PacketsIn += c.PacketsBA()
		want[key{c.A, c.B}] = w
	}

	dir := t.TempDir()
	writePcap := func(name string, convs []flowgen.Conv) (string, int) {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := flowgen.WritePcap(f, time.Now().Add(-time.Minute), convs); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		packets := 0
		for _, c := range convs {
			packets += c.Packets
			if c.PayloadBA >= 0 {
				packets += c.Packets
			}
		}
		return path, packets
	}
	gwPcap, gwPackets := writePcap("gateway.pcap", viaGateway)
	edgePcap, _ := writePcap("edge.pcap", viaEdge)

	cfg := writeConfig(t, t.TempDir(), `networks: [10.80.0.0/24]
scan:
  source: sweep:lab
  devices:
    interval: 10s
    wait: 1s
plugins:
  flowlistener:
    gw:
      enabled: true
      listen: 10.80.0.2:2055
      exporters: [10.80.0.1, 10.80.0.5]
`)
	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "lab", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	if !eventually(20*time.Second, func() bool { return strings.Contains(d.log.String(), "flow listener bound") }) {
		t.Fatalf("the flow listener never bound:\n%s", d.log)
	}

	ctx := t.Context()
	for _, sub := range []string{"gw", "edge"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	in := func(node string) []string { return []string{"ip", "netns", "exec", l.NS[node]} }
	if err := flowtest.Softflowd(ctx, in(lab.NodeDNS), filepath.Join(dir, "gw"), gwPcap, "10.80.0.2:2055", "9", gwPackets); err != nil {
		t.Fatal(err)
	}
	if err := flowtest.Nfreplay(ctx, in("edge"), filepath.Join(dir, "edge"), edgePcap, "10.80.0.2", 2055); err != nil {
		t.Fatal(err)
	}

	// The devices, found by the sweep.
	ids := map[netip.Addr]string{}
	if !eventually(60*time.Second, func() bool {
		code, body := d.do(t, "GET", "/api/devices?limit=1000", tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("devices: %d %s", code, body)
		}
		for _, dev := range page.Items {
			for _, ad := range dev.Addresses {
				if ip, err := netip.ParseAddr(ad.IP); err == nil && ad.RetiredAt == nil {
					ids[ip] = dev.ID
				}
			}
		}
		return ids[printer] != "" && ids[laptop] != ""
	}) {
		t.Fatalf("the sweep never found the printer and the laptop: %v\n%s", ids, d.log)
	}

	// One window (60 s) after the exports, the totals are in.
	byPeer := func(dev netip.Addr) map[key]traffic.Totals {
		code, body := d.do(t, "GET", "/api/devices/"+ids[dev]+"/traffic?by=peer&limit=100", tok, "", "")
		var page projections.Page[traffic.Item]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("traffic of %v: %d %s", dev, code, body)
		}
		got := map[key]traffic.Totals{}
		for _, it := range page.Items {
			tot := it.Totals
			tot.FlowsIn, tot.FlowsOut = 0, 0 // exporters split flows their own way
			got[key{dev, netip.MustParseAddr(it.Peer)}] = tot
		}
		return got
	}
	var diff string
	if !eventually(150*time.Second, func() bool {
		got := byPeer(printer)
		for k, v := range byPeer(laptop) {
			got[k] = v
		}
		diff = cmp.Diff(want, got, cmp.Comparer(func(x, y netip.Addr) bool { return x == y }))
		return diff == ""
	}) {
		t.Fatalf("device traffic never matched the captures (-want +got):\n%s\nlog:\n%s", diff, d.log)
	}

	// The overview: both devices with their totals, the three peers, the
	// total of what the devices sent and received.
	code, body := d.do(t, "GET", "/api/traffic?limit=10", tok, "", "")
	var ov traffic.Overview
	if code != 200 || json.Unmarshal(body, &ov) != nil {
		t.Fatalf("overview: %d %s", code, body)
	}
	var total traffic.Totals
	devTotals := map[string]traffic.Totals{}
	for k, v := range want {
		total.BytesIn += v.BytesIn
		total.BytesOut += v.BytesOut
		dt := devTotals[ids[k.dev]]
		dt.BytesIn += v.BytesIn
		dt.BytesOut += v.BytesOut
		devTotals[ids[k.dev]] = dt
	}
	if ov.Total.BytesIn != total.BytesIn || ov.Total.BytesOut != total.BytesOut {
		t.Errorf("overview total %+v, want bytes in %d out %d", ov.Total, total.BytesIn, total.BytesOut)
	}
	if len(ov.Devices) != 2 {
		t.Errorf("overview devices %+v, want the printer and the laptop", ov.Devices)
	}
	for _, dv := range ov.Devices {
		if w := devTotals[dv.DeviceID]; dv.BytesIn != w.BytesIn || dv.BytesOut != w.BytesOut {
			t.Errorf("overview device %s: %+v, want bytes in %d out %d", dv.DeviceID, dv.Totals, w.BytesIn, w.BytesOut)
		}
	}
	peers := map[string]string{}
	for _, p := range ov.Peers {
		peers[p.Peer] = p.Country
	}
	for _, p := range []netip.Addr{cloudflare, google, quad9} {
		if c, ok := peers[p.String()]; !ok || c == "" {
			t.Errorf("overview peers %+v: %v missing or without a country", ov.Peers, p)
		}
	}
	_, scans := d.do(t, "GET", "/api/scans?source=flowlistener:gw&limit=5", tok, "", "")
	if !strings.Contains(string(scans), `"kind":"flows"`) || !strings.Contains(string(scans), `"complete":true`) {
		t.Errorf("flow windows not in the scan log: %s", scans)
	}
	if s := d.log.String(); strings.Contains(s, "not_exporter") || strings.Contains(s, "no_template") {
		t.Errorf("the listener dropped datagrams of the exporters:\n%s", s)
	}
}
