package ingest

import (
	"context"
	"fmt"
	"sync"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

// sweepBase is what the sink last appended for one source's sweeps: the
// seq of that event and its responders in address order, the base of the
// next sweep's references.
type sweepBase struct {
	seq   uint64
	hosts []events.SweepHost
	byIP  map[string]int
}

type sweepBases struct {
	mu sync.Mutex
	m  map[string]*sweepBase
}

func (b *sweepBases) get(source string) *sweepBase {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[source]
}

func (b *sweepBases) set(source string, v *sweepBase) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*sweepBase)
	}
	if v == nil {
		delete(b.m, source)
		return
	}
	b.m[source] = v
}

// SweepDeltaEvent converts a sweep into its event written against base,
// the source's previous sweep (nil: written whole): each responder that
// answered exactly as in base is a reference and its round trip (Same),
// the others are whole (Hosts). It returns the responders in address
// order, the next base once appended.
func SweepDeltaEvent(s *sources.Sweep, source string, base *sweepBase) (events.Envelope, []events.SweepHost, error) {
	e, err := SweepEvent(s, source)
	if err != nil {
		return events.Envelope{}, nil, err
	}
	var p events.SweepCompleted
	if err := events.Default.DecodeInto(e, &p); err != nil {
		return events.Envelope{}, nil, fmt.Errorf("ingest: sweep %s: %w", s.ScanID, err)
	}
	all := p.Hosts // SweepEvent sorts them by address
	if base == nil {
		return e, all, nil
	}
	p.Base = base.seq
	p.Hosts = nil
	for k := range all {
		h := &all[k]
		if i, ok := base.byIP[h.IP]; ok && events.SameResponder(&base.hosts[i], h) {
			p.Same = append(p.Same, int64(i), h.RTTMicros)
			continue
		}
		p.Hosts = append(p.Hosts, *h)
	}
	if p.Hosts == nil {
		p.Hosts = []events.SweepHost{}
	}
	d, err := events.New(events.KindSweepCompleted, p, s.Finished)
	if err != nil {
		return events.Envelope{}, nil, fmt.Errorf("ingest: sweep %s: %w", s.ScanID, err)
	}
	d.Source, d.Actor, d.Stream = e.Source, e.Actor, e.Stream
	return d, all, nil
}

// recordSweep appends a sweep against the source's previous one. When the
// append fails the base is dropped: the next sweep is written whole.
func (s *Sink) recordSweep(ctx context.Context, run sources.Run, sw *sources.Sweep) error {
	source := run.Instance.Source
	e, all, err := SweepDeltaEvent(sw, source, s.sweeps.get(source))
	if err != nil {
		return err
	}
	out, err := s.log.Append(ctx, e)
	if err != nil {
		s.sweeps.set(source, nil)
		return fmt.Errorf("ingest: append %s of %s: %w", e.Kind, source, err)
	}
	next := &sweepBase{seq: out[0].Seq, hosts: all, byIP: make(map[string]int, len(all))}
	for i := range all {
		next.byIP[all[i].IP] = i
	}
	s.sweeps.set(source, next)
	return nil
}
