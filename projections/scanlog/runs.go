package scanlog

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
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
	Datagrams uint64            `json:"datagrams"`
	Flows     uint64            `json:"flows"`
	LostFlows uint64            `json:"lost_flows"`
	Drops     map[string]uint64 `json:"drops"`
	Exporters []flowExporter    `json:"exporters"`
}

type flowExporter struct {
	Addr      string `json:"addr"`
	Versions  []int  `json:"versions"`
	Templates int    `json:"templates"`
	Sampling  uint32 `json:"sampling"`
	Restarts  uint64 `json:"restarts"`
	Held      int    `json:"held"`
}

// flowScan is a flow window's entry (kind "flows"): the listener's state
// in the entry's fields (see flowScanOf).
func (l *Log) flowScan(ev events.Envelope) (projections.Scan, error) {
	var h flowHead
	if err := l.reg.DecodeInto(ev, &h); err != nil {
		return projections.Scan{}, err
	}
	return flowScanOf(&h), nil
}

// flowScanOf is a flow window's entry: its exporters as its networks,
// each with its versions, templates and sampling ("192.0.2.1 (v9; 5
// templates; sampling 1:100)"), and as the hosts found; the datagrams
// the exporters sent as its probes; its flows as rows; and among its
// errors, after the listener's own, its drops in one sentence that
// counts each reason in its own unit, then its estimated loss.
func flowScanOf(h *flowHead) projections.Scan {
	nets := make([]string, 0, len(h.Exporters))
	for i := range h.Exporters {
		nets = append(nets, exporterEntry(&h.Exporters[i]))
	}
	errs := slices.Clone(h.Errors)
	if d := dropsSentence(h.Drops, h.Errors); d != "" {
		errs = append(errs, d)
	}
	if h.LostFlows > 0 {
		errs = append(errs, fmt.Sprintf("estimated %d flows lost (sequence gaps)", h.LostFlows))
	}
	return projections.Scan{
		ID: h.ScanID, Kind: "flows", Started: h.Started.UTC(), Finished: h.Finished.UTC(),
		Networks: nets, ProbesSent: int(min(h.Datagrams, maxCount)), HostsFound: len(h.Exporters),
		Rows: int(min(h.Flows, maxCount)), Complete: h.Complete, Errors: errs,
	}
}

// maxCount caps a count of the listener's (uint64) in an entry's int.
const maxCount = 1<<31 - 1

// exporterEntry is an exporter as one of a flow window's networks: its
// address, then its protocol versions, its templates (v9 and IPFIX),
// and its sampling when it samples.
func exporterEntry(e *flowExporter) string {
	var parts []string
	templates := e.Templates > 0
	if len(e.Versions) > 0 {
		vs := make([]string, 0, len(e.Versions))
		for _, v := range e.Versions {
			switch v {
			case 10:
				vs = append(vs, "IPFIX")
			default:
				vs = append(vs, "v"+strconv.Itoa(v))
			}
			templates = templates || v == 9 || v == 10
		}
		parts = append(parts, strings.Join(vs, "/"))
	}
	if templates {
		parts = append(parts, plural(uint64(max(e.Templates, 0)), "template", "templates"))
	}
	if e.Sampling > 1 {
		parts = append(parts, "sampling 1:"+strconv.FormatUint(uint64(e.Sampling), 10))
	}
	if e.Restarts > 0 {
		parts = append(parts, plural(e.Restarts, "restart", "restarts"))
	}
	if e.Held > 0 {
		parts = append(parts, plural(uint64(e.Held), "data set waiting for its template", "data sets waiting for their templates"))
	}
	if len(parts) == 0 {
		return e.Addr
	}
	return e.Addr + " (" + strings.Join(parts, "; ") + ")"
}

// dropReasons are the flow listener's drop reasons in its order, each
// with what it counts (sources/flowlistener, decode.go): a reason's
// count is of datagrams, sets, templates, records or flows, never to be
// summed with another's.
var dropReasons = []dropReason{
	{"not_exporter", "datagram from an address not in exporters", "datagrams from addresses not in exporters"},
	{"short", "datagram shorter than its header says", "datagrams shorter than their headers say"},
	{"version", "datagram of an unknown version", "datagrams of an unknown version"},
	{"malformed", "malformed set or template", "malformed sets or templates"},
	{"no_template", "data set without a template", "data sets without a template"},
	{"template_expired", "data set whose template expired", "data sets whose template expired"},
	{"no_address", "flow record without addresses", "flow records without addresses"},
	{"limits", "datagram or template over the limits", "datagrams or templates over the limits"},
	{"table_full", "flow past the window's row limit", "flows past the window's row limit"},
}

type dropReason struct{ reason, one, many string }

// dropsSentence says a window's drops, each reason in its unit ("dropped
// 12 datagrams from addresses not in exporters; 3 data sets without a
// template"); a reason this list does not know comes last, by its name
// ("5 counted as x"). not_exporter is left out when the listener's own
// error already counts it (with the first addresses).
func dropsSentence(drops map[string]uint64, said []string) string {
	if len(drops) == 0 {
		return ""
	}
	parts := make([]string, 0, len(drops))
	for _, r := range dropReasons {
		n := drops[r.reason]
		if n == 0 {
			continue
		}
		if r.reason == "not_exporter" && slices.ContainsFunc(said, func(e string) bool {
			return strings.HasPrefix(e, fmt.Sprintf("dropped %d datagrams from addresses not in exporters", n))
		}) {
			continue
		}
		parts = append(parts, plural(n, r.one, r.many))
	}
	var other []string
	for r, n := range drops {
		if n > 0 && !slices.ContainsFunc(dropReasons, func(d dropReason) bool { return d.reason == r }) {
			other = append(other, r)
		}
	}
	slices.Sort(other)
	for _, r := range other {
		parts = append(parts, strconv.FormatUint(drops[r], 10)+" counted as "+r)
	}
	if len(parts) == 0 {
		return ""
	}
	return "dropped " + strings.Join(parts, "; ")
}

// plural is n with one or many.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatUint(n, 10) + " " + many
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
