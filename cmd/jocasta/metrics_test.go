package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
)

// /metrics is the Prometheus text format behind a read token: a real
// parser reads it, and it counts what serve did (API requests by route,
// log commits, a plugin read by source and outcome, the projections'
// lag, the Go runtime).
func TestMetrics(t *testing.T) {
	router := routerapitest.New("inv", "pw-metrics")
	for _, menu := range []string{"interface", "ip/dhcp-server/lease", "interface/bridge/host"} {
		router.Set(menu, nil)
	}
	router.Set("ip/arp", []routerapitest.Row{{"address": "192.0.2.9", "mac-address": "02:00:00:00:00:09", "status": "reachable", "complete": "true"}})
	ts := httptest.NewServer(router)
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	cfg := writeConfig(t, t.TempDir(), `scan:
  devices:
    enabled: false
    interval: 1s
plugins:
  routerapi:
    core:
      enabled: true
      host: 127.0.0.1
      port: `+u.Port()+`
      user: inv
      password: pw-metrics
`)
	d := startDaemon(t, cfg)
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "prom", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatal(stderr)
	}
	tok := lastLine(out)
	d.do(t, "GET", "/api/devices", tok, "", "")
	d.do(t, "GET", "/api/devices/nope", tok, "", "")

	scrape := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", d.base+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := scrape(""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d", code)
	}
	var fams map[string]*dto.MetricFamily
	if !eventually(30*time.Second, func() bool {
		code, body := scrape(tok)
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		var p expfmt.TextParser
		var err error
		fams, err = p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("the Prometheus parser refuses /metrics: %v\n%s", err, body)
		}
		return fams["jocasta_source_runs_total"] != nil
	}) {
		t.Fatalf("no plugin read counted\n%s", d.log)
	}
	find := func(name string, labels map[string]string) *dto.Metric {
		f := fams[name]
		if f == nil {
			t.Fatalf("no metric %s", name)
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, lp := range m.Label {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			return m
		}
		t.Fatalf("no %s with %v in %v", name, labels, f.Metric)
		return nil
	}
	if m := find("jocasta_http_requests_total", map[string]string{"route": "/api/devices", "status": "200"}); m.GetCounter().GetValue() < 1 {
		t.Errorf("requests: %v", m)
	}
	find("jocasta_http_requests_total", map[string]string{"route": "/api/devices/{id}", "status": "404"})
	if m := find("jocasta_source_runs_total", map[string]string{"source": "routerapi:core", "kind": "routerapi", "outcome": "complete"}); m.GetCounter().GetValue() < 1 {
		t.Errorf("runs: %v", m)
	}
	if m := find("jocasta_log_commits_total", nil); m.GetCounter().GetValue() < 1 {
		t.Errorf("commits: %v", m)
	}
	if f := fams["jocasta_log_commit_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("commit latency is not a histogram: %v", f)
	}
	find("jocasta_projection_lag_events", nil)
	find("go_goroutines", nil)
	_, body := scrape(tok)
	if strings.Contains(body, "pw-metrics") || strings.Contains(body, tok) {
		t.Error("a secret in /metrics")
	}
}
