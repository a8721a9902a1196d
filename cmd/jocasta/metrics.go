package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/scheduler"
)

// serviceMetrics are serve's metrics, served at /metrics in the
// Prometheus text format (behind a read token): sources' runs, the log's
// appends and commit (fsync) latency, the projections' lag, API requests,
// notification deliveries, flow datagrams, and the Go runtime.
type serviceMetrics struct {
	set *metrics.Set
}

// newServiceMetrics registers the gauges read from c (log head,
// projection lag) and returns the metrics the other parts report to.
func newServiceMetrics(c *core) *serviceMetrics {
	// # TYPE lines, so that scrapers know counters from gauges.
	metrics.ExposeMetadata(true)
	m := &serviceMetrics{set: metrics.NewSet()}
	m.set.NewGauge("jocasta_log_head_seq", func() float64 { return float64(c.st.Head()) })
	m.set.NewGauge("jocasta_projection_lag_events", func() float64 {
		head, applied := c.st.Head(), c.run.Applied()
		if applied >= head {
			return 0
		}
		return float64(head - applied)
	})
	m.set.NewGauge("jocasta_projections_ready", func() float64 {
		if c.run.Ready() {
			return 1
		}
		return 0
	})
	c.st.SetCommitObserver(m.commit)
	return m
}

// label quotes a label value for a metric name (backslash, quote and
// newline escaped, as the text format wants).
func label(v string) string {
	return strconv.Quote(strings.ToValidUTF8(v, "?"))
}

// commit records one log commit (store.SetCommitObserver).
func (m *serviceMetrics) commit(n int, took time.Duration) {
	m.set.GetOrCreateCounter("jocasta_log_appended_events_total").Add(n)
	m.set.GetOrCreateCounter("jocasta_log_commits_total").Inc()
	m.set.GetOrCreatePrometheusHistogram("jocasta_log_commit_seconds").Update(took.Seconds())
}

// request records one API, MCP or UI request (httpapi.Config.ObserveRequest).
func (m *serviceMetrics) request(route string, status int, took time.Duration) {
	m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_http_requests_total{route=%s,status=\"%d\"}", label(route), status)).Inc()
	m.set.GetOrCreatePrometheusHistogram(fmt.Sprintf("jocasta_http_request_seconds{route=%s}", label(route))).Update(took.Seconds())
}

// delivery records one notification attempt (notify.Options.Observe).
func (m *serviceMetrics) delivery(destination, outcome string) {
	m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_notify_deliveries_total{destination=%s,outcome=%s}", label(destination), label(outcome))).Inc()
}

// sink wraps the sources' sink: every run is counted by source and
// outcome before it is recorded.
func (m *serviceMetrics) sink(next scheduler.Sink) scheduler.Sink {
	return metricSink{m: m, next: next}
}

type metricSink struct {
	m    *serviceMetrics
	next scheduler.Sink
}

// Record implements scheduler.Sink.
func (s metricSink) Record(ctx context.Context, run sources.Run) error {
	err := s.next.Record(ctx, run)
	s.m.run(run, err)
	return err
}

// run records one run of a source: its outcome (complete, incomplete,
// failed, or not_recorded when the log refused it), duration, and what it
// found.
func (m *serviceMetrics) run(run sources.Run, recordErr error) {
	src, kind := label(run.Instance.Source), label(run.Instance.Kind)
	outcome := "failed"
	if run.Result != nil {
		outcome = "incomplete"
		if run.Result.Scan().Complete {
			outcome = "complete"
		}
	}
	if recordErr != nil {
		outcome = "not_recorded"
	}
	m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_source_runs_total{kind=%s,source=%s,outcome=%q}", kind, src, outcome)).Inc()
	if !run.Finished.IsZero() && run.Finished.After(run.Started) {
		m.set.GetOrCreatePrometheusHistogram(fmt.Sprintf("jocasta_source_run_seconds{kind=%s,source=%s}", kind, src)).
			Update(run.Finished.Sub(run.Started).Seconds())
	}
	switch r := run.Result.(type) {
	case *sources.Sweep:
		m.set.GetOrCreateGauge(fmt.Sprintf("jocasta_sweep_hosts{source=%s}", src), nil).Set(float64(len(r.Hosts)))
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_sweep_errors_total{source=%s}", src)).Add(len(r.Errors))
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_sweep_probes_total{source=%s}", src)).Add(r.ProbesSent)
	case *sources.HostRead:
		m.set.GetOrCreateGauge(fmt.Sprintf("jocasta_plugin_read_hosts{source=%s}", src), nil).Set(float64(len(r.Hosts)))
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_plugin_read_rows_total{source=%s}", src)).Add(r.Rows)
	case *sources.FlowWindow:
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_flow_datagrams_total{source=%s}", src)).AddInt64(int64(r.Datagrams))
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_flow_flows_total{source=%s}", src)).AddInt64(int64(r.Flows))
		m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_flow_lost_flows_total{source=%s}", src)).AddInt64(int64(r.LostFlows))
		for reason, n := range r.Drops {
			m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_flow_dropped_datagrams_total{source=%s,reason=%s}", src, label(reason))).AddInt64(int64(n))
		}
	}
}

// handler writes every metric, then the process's and the Go runtime's.
func (m *serviceMetrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.set.WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
}

// metricsHandler is /metrics in serve, nil for a command alone.
func (c *core) metricsHandler() http.Handler {
	if c.metrics == nil {
		return nil
	}
	return c.metrics.handler()
}

// observeRequest is the API's request observer in serve, else nil.
func (c *core) observeRequest() func(string, int, time.Duration) {
	if c.metrics == nil {
		return nil
	}
	return c.metrics.request
}

// observeDelivery is the dispatcher's delivery observer in serve, else nil.
func (c *core) observeDelivery() func(string, string) {
	if c.metrics == nil {
		return nil
	}
	return c.metrics.delivery
}
