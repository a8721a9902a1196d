package ui_test

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/ui/worldmap"
)

// flows appends one flow listener window ending at end with rows.
func (s *stack) flowWindow(end time.Time, rows ...events.TrafficRow) {
	s.t.Helper()
	ev := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{
		ScanID: "w" + end.Format("150405"), Started: end.Add(-time.Minute), Finished: end, Complete: true,
		Listen: "127.0.0.1:2055", Rows: rows,
	}, end)
	ev.Source = "flowlistener:gw"
	s.appendWait(ev)
}

var arcRE = regexp.MustCompile(`<path d="M([\d.]+),([\d.]+)Q[^"]+" class="arc" stroke-width="([\d.]+)"><title>DE ↔ (\w\w): `)

func TestTrafficPage(t *testing.T) {
	s, c := seeded(t, stackOpts{traffic: true})
	// printer.lan (10.0.0.1) talks to 8.8.8.8 (US), nas.lan to 9.9.9.9
	// and 1.1.1.1; two devices talk to each other (no country).
	s.flowWindow(t0.Add(-30*time.Minute),
		events.TrafficRow{Src: "10.0.0.1", Dst: "8.8.8.8", Proto: 6, Port: 443, Bytes: 40_000_000, Packets: 4, Flows: 2},
		events.TrafficRow{Src: "8.8.8.8", Dst: "10.0.0.1", Proto: 6, Port: 443, Bytes: 2_000_000, Packets: 4, Flows: 2},
		events.TrafficRow{Src: "10.0.0.2", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 10_000, Packets: 4, Flows: 1},
		events.TrafficRow{Src: "10.0.0.2", Dst: "10.0.0.3", Proto: 6, Port: 445, Bytes: 5_000, Packets: 4, Flows: 1},
	)
	w := c.get("/traffic")
	wantStatus(t, w, http.StatusOK, `aria-current="page">Traffic`, "Top devices", "printer.lan", "nas.lan", "8.8.8.8", "1.1.1.1",
		"40.0 MB", `<span aria-current="true">last 24 hours</span>`, `class="world"`, `<image href="/static/world.`, `class="home"`)
	body := htmlUnescape(w.Body.String())
	arcs := arcRE.FindAllStringSubmatch(body, -1)
	if len(arcs) < 1 || arcs[0][4] != "US" || arcs[0][3] != "9" {
		t.Fatalf("arcs %q, want the widest to US first", arcs)
	}
	de, _ := worldmap.Centroid("DE")
	for _, a := range arcs {
		if a[1] != num(de.X) || a[2] != num(de.Y) {
			t.Errorf("arc to %s starts at %s,%s, not at home %v", a[4], a[1], a[2], de)
		}
	}
	// The page with its assets (the world map among them) keeps to the
	// 150 KB budget.
	size := w.Body.Len()
	assets := assetRE.FindAllStringSubmatch(w.Body.String(), -1)
	for _, m := range assets {
		a := c.get(m[1])
		if a.Code != http.StatusOK {
			t.Fatalf("asset %s: %d", m[1], a.Code)
		}
		size += a.Body.Len()
	}
	if len(assets) < 3 || size > 150<<10 {
		t.Errorf("the Traffic page with its %d assets is %d bytes, over the 150 KB budget", len(assets), size)
	}
	t.Logf("Traffic page with its assets: %d bytes", size)
	// Ranges: the hour before t0 holds it, a range ending before does not.
	wantStatus(t, c.get("/traffic?range=1h"), http.StatusOK, "printer.lan", `<span aria-current="true">last hour</span>`)
	wantStatus(t, c.get("/traffic?since=2026-01-01&until=2026-01-02"), http.StatusOK, "No traffic in this range.")
	wantStatus(t, c.get("/traffic?since=2026-03-01"), http.StatusOK, "printer.lan")

	// The device page shows the device's top peers.
	wantStatus(t, c.get("/devices/"+s.deviceID("10.0.0.1")), http.StatusOK, "Top peers, last 24 hours", "8.8.8.8", "US", "40.0 MB", "2.0 MB")
	wantStatus(t, c.get("/devices/"+s.deviceID("10.0.0.3")), http.StatusOK, "Top peers", "10.0.0.2", "5.0 kB")

	tests := []struct {
		path string
		want string
	}{
		{"/traffic?range=2y", "The range must be 1h, 24h, 7d or 30d."},
		{"/traffic?range=1h&since=2026-03-01", "either a range or since and until"},
		{"/traffic?since=2026-03-02&until=2026-03-01", "must be before its end"},
		{"/traffic?since=2024-01-01&until=2026-03-01", "longer than 400 days"},
		{"/traffic?since=yesterday", "must be a date"},
		{"/traffic?by=peer", "Unknown query parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			wantStatus(t, c.get(tc.path), http.StatusBadRequest, tc.want)
		})
	}
}

// num is a map coordinate as the map writes it.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

func TestTrafficOff(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	body := c.get("/devices").Body.String()
	if strings.Contains(body, `href="/traffic"`) {
		t.Error("the menu links to the Traffic page with no traffic recorded")
	}
	wantStatus(t, c.get("/traffic"), http.StatusOK, `id="traffic-off"`, "flowlistener")
	if body := c.get("/devices/" + s.deviceID("10.0.0.1")).Body.String(); strings.Contains(body, "Top peers") {
		t.Error("the device page has a Top peers section with no traffic recorded")
	}
}

// BenchmarkTrafficPage serves the Traffic page (top devices, peers,
// countries and the map) over 10,000 devices with a day of flows: 24
// hourly windows of every device talking to 3 of 12 peers in 10
// countries (720,000 rows), for the last 24 hours and the last 7 days.
// It reports the p50 and p99 of one request at a time.
func BenchmarkTrafficPage(b *testing.B) {
	const devices = 10000
	s := newStack(b, stackOpts{traffic: true})
	s.addUser("ada", "correct horse")
	for n := range devices / 250 {
		var hosts []events.SweepHost
		network := fmt.Sprintf("10.%d.%d.0/24", n/256, n%256)
		for i := 1; i <= 250; i++ {
			hosts = append(hosts, events.SweepHost{IP: fmt.Sprintf("10.%d.%d.%d", n/256, n%256, i), Network: network, Via: "icmp",
				MAC: fmt.Sprintf("02:00:00:%02x:%02x:%02x", n/256, n%256, i)})
		}
		ev := events.MustNew(events.KindSweepCompleted, events.SweepCompleted{ScanID: fmt.Sprintf("seed%d", n),
			Started: t0.Add(-25 * time.Hour), Finished: t0.Add(-25 * time.Hour), Networks: []string{network}, ProbesSent: 254, Complete: true, Hosts: hosts}, t0.Add(-25*time.Hour))
		ev.Source = "sweep:bench"
		s.appendWait(ev)
	}
	peers := []string{"8.8.8.8", "1.1.1.1", "133.242.0.3", "200.160.0.8", "151.101.1.69", "193.0.14.129",
		"196.216.2.1", "41.0.0.1", "203.0.178.1", "81.2.69.160", "2.16.0.1", "62.4.0.1"}
	for h := range 24 {
		rows := make([]events.TrafficRow, 0, devices*3)
		for n := range devices {
			src := fmt.Sprintf("10.%d.%d.%d", (n/250)/256, (n/250)%256, n%250+1)
			for k := range 3 {
				rows = append(rows, events.TrafficRow{Src: src, Dst: peers[(n+k*5+h)%len(peers)], Proto: 6, Port: 443,
					Bytes: uint64(1000 + n%977*k), Packets: 3, Flows: 1})
			}
		}
		s.flowWindow(t0.Add(-time.Duration(23-h)*time.Hour-time.Minute), rows...)
	}
	c := s.client()
	c.signIn("ada", "correct horse")
	for _, rg := range []string{"24h", "7d"} {
		b.Run(rg, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				w := c.get("/traffic?range=" + rg)
				lat = append(lat, time.Since(start))
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `class="arc"`) {
					b.Fatalf("traffic page: %d", w.Code)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// With location.country empty the map draws from the country of the
// router's outside address, and says so.
func TestTrafficHomeFromRouter(t *testing.T) {
	s, c := seeded(t, stackOpts{traffic: true, homeFromRouter: true})
	s.flowWindow(t0.Add(-30*time.Minute),
		events.TrafficRow{Src: "10.0.0.1", Dst: "8.8.8.8", Proto: 6, Port: 443, Bytes: 40_000_000, Packets: 4, Flows: 2})
	wantStatus(t, c.get("/traffic"), http.StatusOK, "Set location.country", "no router plugin has read a public outside address")
	read := events.MustNew(events.KindPluginRead, events.PluginRead{ScanID: "r", Kind: "routerapi", Started: t0.Add(-time.Minute), Finished: t0.Add(-time.Minute),
		Complete: true, Peer: &events.ReadPeer{Name: "core", Outside: "212.27.48.10"}}, t0.Add(-time.Minute))
	read.Source = "routerapi:core"
	s.appendWait(read)
	w := c.get("/traffic")
	wantStatus(t, w, http.StatusOK, "Where traffic went from FR", `class="home"`,
		"Home is the country of the router's outside address 212.27.48.10 (read by routerapi:core)")
}
