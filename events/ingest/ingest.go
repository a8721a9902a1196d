package ingest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

// Appender is the part of the log the ingestor needs (store.Store).
type Appender interface {
	Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error)
}

// Ingestor appends source results to the log under one source name.
type Ingestor struct {
	log    Appender
	source string
}

// New returns an ingestor recording results as coming from source
// (scan.source, "sweep:<hostname>" by default).
func New(log Appender, source string) *Ingestor {
	return &Ingestor{log: log, source: source}
}

// Sweep appends one sweep.completed event and returns its seq.
func (i *Ingestor) Sweep(ctx context.Context, s *sources.Sweep) (uint64, error) {
	e, err := SweepEvent(s, i.source)
	if err != nil {
		return 0, err
	}
	return i.append(ctx, e)
}

// PortScan appends one portscan.completed event and returns its seq.
func (i *Ingestor) PortScan(ctx context.Context, p *sources.PortScan) (uint64, error) {
	e, err := PortScanEvent(p, i.source)
	if err != nil {
		return 0, err
	}
	return i.append(ctx, e)
}

func (i *Ingestor) append(ctx context.Context, e events.Envelope) (uint64, error) {
	out, err := i.log.Append(ctx, e)
	if err != nil {
		return 0, fmt.Errorf("ingest: append %s: %w", e.Kind, err)
	}
	return out[0].Seq, nil
}

// SweepEvent converts a sweep into its event. Hosts are sorted by address
// so equal sweeps give equal bytes.
func SweepEvent(s *sources.Sweep, source string) (events.Envelope, error) {
	p := events.SweepCompleted{
		ScanID:     s.ScanID,
		Started:    s.Started.UTC(),
		Finished:   s.Finished.UTC(),
		Networks:   prefixes(s.Networks),
		ProbesSent: s.ProbesSent,
		Complete:   s.Complete,
		Errors:     s.Errors,
		Hosts:      make([]events.SweepHost, 0, len(s.Hosts)),
	}
	hosts := slices.Clone(s.Hosts)
	sort.Slice(hosts, func(a, b int) bool { return hosts[a].IP.Less(hosts[b].IP) })
	for _, h := range hosts {
		if h == nil || !h.IP.IsValid() {
			continue
		}
		sh := events.SweepHost{
			IP:        h.IP.String(),
			MAC:       strings.ToLower(h.MAC.String()),
			RTTMicros: h.RTT.Microseconds(),
			Via:       h.Via,
		}
		if h.Network.IsValid() {
			sh.Network = h.Network.String()
		}
		if len(h.Names) > 0 {
			sh.Names = events.NamesOf(h.Names)
		}
		for _, sv := range h.Services {
			sh.Services = append(sh.Services, events.Service{Instance: sv.Instance, Type: sv.Type, Port: sv.Port})
		}
		if h.UPnP != nil {
			sh.UPnP = &events.UPnP{FriendlyName: h.UPnP.FriendlyName, Manufacturer: h.UPnP.Manufacturer, ModelName: h.UPnP.ModelName}
		}
		p.Hosts = append(p.Hosts, sh)
	}
	e, err := events.New(events.KindSweepCompleted, p, s.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: sweep %s: %w", s.ScanID, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+s.ScanID
	return e, nil
}

// PortScanEvent converts a port scan into its event.
func PortScanEvent(s *sources.PortScan, source string) (events.Envelope, error) {
	p := events.PortScanCompleted{
		ScanID:     s.ScanID,
		Started:    s.Started.UTC(),
		Finished:   s.Finished.UTC(),
		Ports:      s.Ports,
		Targets:    s.Targets,
		ProbesSent: s.ProbesSent,
		Complete:   s.Complete,
		Errors:     s.Errors,
		Results:    make([]events.PortResult, 0, len(s.Open)),
	}
	addrs := make([]netip.Addr, 0, len(s.Open))
	for a := range s.Open {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, a := range addrs {
		open := slices.Clone(s.Open[a])
		slices.Sort(open)
		if open == nil {
			open = []uint16{}
		}
		p.Results = append(p.Results, events.PortResult{IP: a.String(), Open: open})
	}
	e, err := events.New(events.KindPortScanCompleted, p, s.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: port scan %s: %w", s.ScanID, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+s.ScanID
	return e, nil
}

func prefixes(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// Sink records the scheduler's runs (scheduler.Sink): one event per run,
// appended under the instance's source name. A run with a result becomes
// its kind's event; a run that produced nothing becomes scan.failed with
// its reason.
type Sink struct {
	log Appender
	// reads is the last appended host read of each source, the base of
	// the next one's difference. It starts empty, so the first read of
	// each source after a start is written whole. sweeps is the same for
	// sweeps.
	reads  readStates
	sweeps sweepBases
}

// NewSink returns a sink appending to log.
func NewSink(log Appender) *Sink { return &Sink{log: log} }

// Record implements scheduler.Sink.
func (s *Sink) Record(ctx context.Context, run sources.Run) error {
	switch r := run.Result.(type) {
	case *sources.HostRead:
		return s.recordRead(ctx, run, r)
	case *sources.Sweep:
		return s.recordSweep(ctx, run, r)
	}
	e, err := RunEvent(run)
	if err != nil {
		return err
	}
	if w, ok := run.Result.(*sources.FlowWindow); ok {
		// Packed into e, the window's rows (166,667 rows: 10 MB) go
		// before the append, which makes copies of the event.
		w.Rows = nil
	}
	if _, err := s.log.Append(ctx, e); err != nil {
		return fmt.Errorf("ingest: append %s of %s: %w", e.Kind, run.Instance.Source, err)
	}
	return nil
}

// recordRead appends a host read as the difference from the source's
// last appended one. When the append fails the base is dropped: the next
// read is written whole, so the log never holds a difference from a read
// it does not have.
func (s *Sink) recordRead(ctx context.Context, run sources.Run, r *sources.HostRead) error {
	source := run.Instance.Source
	prev := s.reads.get(source)
	e, next, err := PluginReadEvent(r, run.Instance.Kind, source, prev)
	if err != nil {
		return err
	}
	out, err := s.log.Append(ctx, e)
	if err != nil {
		s.reads.set(source, nil)
		return fmt.Errorf("ingest: append %s of %s: %w", e.Kind, source, err)
	}
	next.Seq = out[0].Seq
	s.reads.set(source, next)
	return nil
}

// RunEvent converts one run into its event. A host read is written
// whole (the sink writes it as a difference).
func RunEvent(run sources.Run) (events.Envelope, error) {
	source := run.Instance.Source
	switch r := run.Result.(type) {
	case *sources.Sweep:
		return SweepEvent(r, source)
	case *sources.PortScan:
		return PortScanEvent(r, source)
	case *sources.FlowWindow:
		return FlowEvent(r, source)
	case *sources.DNSRead:
		return DNSEvent(r, run.Instance.Kind, source)
	case *sources.HostRead:
		e, _, err := PluginReadEvent(r, run.Instance.Kind, source, nil)
		return e, err
	case nil:
		return ScanFailedEvent(run)
	default:
		return events.Envelope{}, fmt.Errorf("ingest: %s: no event for a result of type %T", source, run.Result)
	}
}

// maxReason bounds the reason of a scan.failed (one line in the scan log).
const maxReason = 1024

// ScanFailedEvent converts a run that produced nothing into scan.failed.
func ScanFailedEvent(run sources.Run) (events.Envelope, error) {
	reason := "failed without a reason"
	if run.Err != nil {
		reason = strings.Join(strings.Fields(run.Err.Error()), " ")
	}
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	id := newScanID(run)
	e, err := events.New(events.KindScanFailed, events.ScanFailed{
		ScanID: id, Kind: run.Instance.Kind, Started: run.Started.UTC(), Finished: run.Finished.UTC(), Reason: reason,
	}, run.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: scan failed of %s: %w", run.Instance.Source, err)
	}
	e.Source, e.Actor, e.Stream = run.Instance.Source, run.Instance.Source, "scan/"+id
	return e, nil
}

// newScanID names a failed run: its source and start, which are unique
// (an instance never runs twice at once).
func newScanID(run sources.Run) string {
	return fmt.Sprintf("%s@%d", run.Instance.Source, run.Started.UnixNano())
}
