package scanlog

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// The headers below are the parts of each run's event the scan log
// shows. Decoding only them keeps the log cheap to replay: a port scan's
// results decode to their open-port counts, a DNS read's rows to their
// clients. Sweeps, the bulk of a log, are read by scanSweepHead, which
// skips over the hosts (sweephead.go).

// sweepRefs is what the log checks of a sweep against its source's last
// one: the base it names, its references, and its whole hosts.
type sweepRefs struct {
	base  uint64
	same  []int64
	whole int
}

// sweepScan is a sweep's entry (kind "devices"). Its responders are the
// hosts it holds whole and those it repeats from the previous sweep
// (Same: pairs of index and round trip), counted without resolving them.
func (l *Log) sweepScan(ev events.Envelope) (projections.Scan, sweepRefs, error) {
	var h sweepHead
	p, err := l.reg.Upcast(ev)
	if err != nil {
		return projections.Scan{}, sweepRefs{}, err
	}
	if !scanSweepHead(p, &h) {
		var whole events.SweepCompleted
		if err := l.reg.DecodeInto(ev, &whole); err != nil {
			return projections.Scan{}, sweepRefs{}, err
		}
		h = headOf(&whole)
	}
	s, refs := sweepScanOf(h)
	return s, refs, nil
}

// headOf is the header of a decoded sweep.
func headOf(v *events.SweepCompleted) sweepHead {
	return sweepHead{ScanID: v.ScanID, Started: v.Started, Finished: v.Finished, Networks: v.Networks,
		ProbesSent: v.ProbesSent, Complete: v.Complete, Errors: v.Errors, Base: v.Base, Same: v.Same,
		Hosts: len(v.Hosts)}
}

// sweepScanOf is a sweep's entry (kind "devices") and what checking it
// against its source's last sweep needs.
func sweepScanOf(h sweepHead) (projections.Scan, sweepRefs) {
	nets := make([]string, 0, len(h.Networks))
	for _, n := range h.Networks {
		nets = append(nets, canonicalPrefix(n))
	}
	return projections.Scan{
		ID: h.ScanID, Kind: "devices", Started: h.Started.UTC(), Finished: h.Finished.UTC(),
		Networks: nets, ProbesSent: h.ProbesSent, HostsFound: h.Hosts + len(h.Same)/2,
		Complete: h.Complete, Errors: h.Errors,
	}, sweepRefs{base: h.Base, same: h.Same, whole: h.Hosts}
}

// canonicalPrefix writes a network as its masked prefix ("10.0.0.0/24"
// for "10.0.0.7/24"), or as given when it does not parse.
func canonicalPrefix(s string) string {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return s
	}
	var buf [64]byte
	if c := p.Masked().AppendTo(buf[:0]); string(c) != s {
		return string(c)
	}
	return s // already canonical, as sweeps write it: no allocation
}

// portScan is a port scan's entry (kind "ports"): the addresses with an
// open port are the hosts found.
func (l *Log) portScan(ev events.Envelope) (projections.Scan, error) {
	var v events.PortScanCompleted
	if err := l.reg.DecodeInto(ev, &v); err != nil {
		return projections.Scan{}, err
	}
	return portScanOf(&v), nil
}

// portScanOf is a port scan's entry.
func portScanOf(v *events.PortScanCompleted) projections.Scan {
	found := 0
	for _, r := range v.Results {
		if len(r.Open) > 0 {
			found++
		}
	}
	return projections.Scan{
		ID: v.ScanID, Kind: "ports", Started: v.Started.UTC(), Finished: v.Finished.UTC(),
		ProbesSent: v.ProbesSent, HostsFound: found, Complete: v.Complete, Errors: v.Errors,
	}
}

type readHead struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors"`
	Rows     int       `json:"rows"`
	Hosts    int       `json:"hosts"`
}

// readScan is a plugin read's entry (kind: the plugin's): the hosts its
// tables made and the rows it read, whether the read was written whole
// or as the difference from the previous one.
func (l *Log) readScan(ev events.Envelope) (projections.Scan, error) {
	var h readHead
	if err := l.reg.DecodeInto(ev, &h); err != nil {
		return projections.Scan{}, err
	}
	return readScanOf(h), nil
}

// readScanOf is a plugin read's entry.
func readScanOf(h readHead) projections.Scan {
	return projections.Scan{
		ID: h.ScanID, Kind: h.Kind, Started: h.Started.UTC(), Finished: h.Finished.UTC(),
		HostsFound: h.Hosts, Rows: h.Rows, Complete: h.Complete, Errors: h.Errors,
	}
}

type dnsHead struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors"`
	Entries  int       `json:"entries"`
	Rows     []struct {
		Client string `json:"c"`
	} `json:"rows"`
}

// dnsScan is a DNS read's entry (kind: the plugin's): its entries as
// rows, its distinct clients as the hosts found.
func (l *Log) dnsScan(ev events.Envelope) (projections.Scan, error) {
	var h dnsHead
	if err := l.reg.DecodeInto(ev, &h); err != nil {
		return projections.Scan{}, err
	}
	clients := make(map[string]struct{}, 16)
	for _, r := range h.Rows {
		clients[r.Client] = struct{}{}
	}
	return projections.Scan{
		ID: h.ScanID, Kind: h.Kind, Started: h.Started.UTC(), Finished: h.Finished.UTC(),
		HostsFound: len(clients), Rows: h.Entries, Complete: h.Complete, Errors: h.Errors,
	}, nil
}

type flowHead struct {
	ScanID    string            `json:"scan_id"`
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished"`
	Complete  bool              `json:"complete"`
	Errors    []string          `json:"errors"`
	Flows     uint64            `json:"flows"`
	LostFlows uint64            `json:"lost_flows"`
	Drops     map[string]uint64 `json:"drops"`
	Exporters []struct{}        `json:"exporters"`
}

// flowScan is a flow window's entry (kind "flows"): the exporters heard
// as hosts, the flows as rows, drops and estimated loss said in words
// beside the errors.
func (l *Log) flowScan(ev events.Envelope) (projections.Scan, error) {
	var h flowHead
	if err := l.reg.DecodeInto(ev, &h); err != nil {
		return projections.Scan{}, err
	}
	errs := slices.Clone(h.Errors)
	if len(h.Drops) > 0 {
		reasons := make([]string, 0, len(h.Drops))
		for r := range h.Drops {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		parts := make([]string, 0, len(reasons))
		var total uint64
		for _, r := range reasons {
			parts = append(parts, fmt.Sprintf("%s %d", r, h.Drops[r]))
			total += h.Drops[r]
		}
		errs = append(errs, fmt.Sprintf("dropped %d datagrams (%s)", total, strings.Join(parts, ", ")))
	}
	if h.LostFlows > 0 {
		errs = append(errs, fmt.Sprintf("estimated %d flows lost (sequence gaps)", h.LostFlows))
	}
	return projections.Scan{
		ID: h.ScanID, Kind: "flows", Started: h.Started.UTC(), Finished: h.Finished.UTC(),
		HostsFound: len(h.Exporters), Rows: int(min(h.Flows, 1<<31-1)), Complete: h.Complete, Errors: errs,
	}, nil
}

// failedScan is the entry of a run that produced nothing: its reason is
// its one error. The sources' kinds "sweep" and "portscan" are shown as
// the kinds of their entries, "devices" and "ports".
func (l *Log) failedScan(ev events.Envelope) (projections.Scan, error) {
	var p events.ScanFailed
	if err := l.reg.DecodeInto(ev, &p); err != nil {
		return projections.Scan{}, err
	}
	kind := p.Kind
	switch kind {
	case "sweep":
		kind = "devices"
	case "portscan":
		kind = "ports"
	}
	return projections.Scan{
		ID: p.ScanID, Kind: kind, Started: p.Started.UTC(), Finished: p.Finished.UTC(),
		Errors: []string{p.Reason},
	}, nil
}

type purge struct{ before time.Time }

// purgeOf reads the history cutoff of a retention.purged (nil: the
// purge keeps every entry).
func (l *Log) purgeOf(ev events.Envelope) (*purge, error) {
	var p events.RetentionPurged
	if err := l.reg.DecodeInto(ev, &p); err != nil {
		return nil, fmt.Errorf("scanlog: seq %d: %w", ev.Seq, err)
	}
	if p.HistoryBefore == nil {
		return nil, nil
	}
	return &purge{before: p.HistoryBefore.UTC()}, nil
}
