package ui_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/ui"
)

// BenchmarkDevicesPage serves the devices page (100 rows, the default)
// over an inventory of 10,000 devices to 20 concurrent HTTP clients on
// loopback, each with its own session, and reports the server-side p50
// and p99 latencies and the bytes of the page with its assets (make
// bench-ui; docs/performance.md).
func BenchmarkDevicesPage(b *testing.B) {
	const devices, clients = 10000, 20
	s := newStack(b, stackOpts{cfg: ui.Config{AccountBurst: clients}}) // every client signs in
	s.addUser("ada", "correct horse")
	// 40 complete sweeps of distinct /24s, 250 hosts each.
	for n := range devices / 250 {
		var hosts []events.SweepHost
		network := fmt.Sprintf("10.%d.%d.0/24", n/256, n%256)
		for i := 1; i <= 250; i++ {
			hosts = append(hosts, events.SweepHost{
				IP: fmt.Sprintf("10.%d.%d.%d", n/256, n%256, i), Network: network, Via: "icmp", RTTMicros: 700,
				MAC: fmt.Sprintf("02:00:00:%02x:%02x:%02x", n/256, n%256, i), Names: events.NamesOf(map[string]string{"dns": fmt.Sprintf("host-%d-%d.lan", n, i)}),
			})
		}
		ev := events.MustNew(events.KindSweepCompleted, events.SweepCompleted{
			ScanID: fmt.Sprintf("seed%d", n), Started: t0.Add(-time.Minute), Finished: t0, Networks: []string{network},
			ProbesSent: 254, Complete: true, Hosts: hosts,
		}, t0)
		ev.Source = "sweep:bench"
		s.appendWait(ev)
	}
	cs := make([]*client, clients)
	for i := range cs {
		cs[i] = s.client()
		cs[i].addr = fmt.Sprintf("192.0.2.%d:1", i+1)
		cs[i].signIn("ada", "correct horse")
	}
	page := cs[0].get("/devices")
	if page.Code != http.StatusOK || len(rowRE.FindAllString(page.Body.String(), -1)) != 100 {
		b.Fatalf("devices page: %d with %d rows", page.Code, len(rowRE.FindAllString(page.Body.String(), -1)))
	}
	size := page.Body.Len()
	for _, m := range assetRE.FindAllStringSubmatch(page.Body.String(), -1) {
		w := cs[0].get(m[1])
		if w.Code != http.StatusOK {
			b.Fatalf("asset %s: %d", m[1], w.Code)
		}
		size += w.Body.Len()
	}
	if size > 150<<10 {
		b.Errorf("page with assets is %d bytes, over the 150 KB budget", size)
	}

	// A real HTTP server on loopback, so that each request is a
	// goroutine that starts and ends as a server's does; the latency is
	// measured server-side, from the handler's start to its end.
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N+clients)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = "192.0.2.1:1"
		start := time.Now()
		s.ui.ServeHTTP(w, r)
		d := time.Since(start)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := max(b.N/clients, 1)
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/devices", nil)
				req.AddCookie(c.cookie)
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.ReportMetric(p(0.5), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
	}
	b.ReportMetric(float64(size)/1024, "page+assets-KB")
}

var (
	rowRE   = regexp.MustCompile(`<input type="checkbox" name="id"`)
	assetRE = regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`)
)
