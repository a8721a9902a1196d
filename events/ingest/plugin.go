package ingest

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

// signalSlack is the change of a wireless signal that is not recorded:
// a signal jitters by a few dB from read to read, and recording every
// jitter would make every read of a stable network a change.
const signalSlack = 5

// ReadBase is what was last appended for one source's host reads: the
// seq of that event and the host set it left, the base of the next
// read's difference (ReadDelta). The sink keeps one per source, and so
// does the central for its sensors' sources.
type ReadBase struct {
	// Seq is the seq of the appended event; set it once the event that
	// ReadDelta returned with this base is appended.
	Seq   uint64
	peer  events.ReadPeer
	hosts map[string]events.ReadHost
}

// readStates holds the state of every source, for the sink's goroutines.
type readStates struct {
	mu sync.Mutex
	m  map[string]*ReadBase
}

func (r *readStates) get(source string) *ReadBase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[source]
}

func (r *readStates) set(source string, st *ReadBase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]*ReadBase)
	}
	if st == nil {
		delete(r.m, source)
		return
	}
	r.m[source] = st
}

// readHost converts a host of a read.
func readHost(h *sources.ReadHost) events.ReadHost {
	out := events.ReadHost{MAC: h.MAC, Seen: h.Seen, Port: h.Port, SSID: h.SSID, Band: h.Band, Signal: h.Signal}
	for _, ip := range h.IPs {
		out.IPs = append(out.IPs, ip.String())
	}
	if len(h.Names) > 0 {
		out.Names = maps.Clone(h.Names)
	}
	return out
}

func sameHost(a, b events.ReadHost) bool {
	return a.MAC == b.MAC && a.Seen == b.Seen && a.Port == b.Port && a.SSID == b.SSID && a.Band == b.Band &&
		a.Signal == b.Signal && slices.Equal(a.IPs, b.IPs) && maps.Equal(a.Names, b.Names)
}

func samePeer(a, b events.ReadPeer) bool {
	return a.Name == b.Name && a.Model == b.Model && slices.Equal(a.MACs, b.MACs) && a.Outside == b.Outside
}

// PluginReadEvent converts a host read into its plugin.read event: the
// difference from prev (the source's last appended read) when prev is
// set and the read is complete, else every host read. It returns the
// base the event leaves, to become prev once the event is appended.
func PluginReadEvent(r *sources.HostRead, kind, source string, prev *ReadBase) (events.Envelope, *ReadBase, error) {
	whole := events.PluginRead{
		ScanID:   r.ScanID,
		Kind:     kind,
		Started:  r.Started.UTC(),
		Finished: r.Finished.UTC(),
		Complete: r.Complete,
		Errors:   r.Errors,
		Rows:     r.Rows,
		Peer:     &events.ReadPeer{Name: r.Peer.Name, Model: r.Peer.Model, MACs: slices.Clone(r.Peer.MACs), Outside: r.Peer.Outside},
	}
	for _, h := range r.Hosts {
		if h != nil && h.MAC != "" {
			whole.Set = append(whole.Set, readHost(h))
		}
	}
	p, next := ReadDelta(whole, prev)
	e, err := events.New(events.KindPluginRead, p, r.Finished)
	if err != nil {
		return events.Envelope{}, nil, fmt.Errorf("ingest: read %s of %s: %w", r.ScanID, source, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+r.ScanID
	return e, next, nil
}

// ReadDelta writes a whole read (no Base: Set holds every host read, in
// any order) as the difference from prev when prev is set and the read
// is complete; else as every host read, in MAC order. A signal within
// signalSlack of prev's is recorded as prev's. It returns the payload and
// the base it leaves (Seq unset).
func ReadDelta(whole events.PluginRead, prev *ReadBase) (events.PluginRead, *ReadBase) {
	p := whole
	p.Base, p.Set, p.Gone, p.Peer = 0, nil, nil, nil
	var peer events.ReadPeer
	if whole.Peer != nil {
		peer = *whole.Peer
	}
	next := &ReadBase{peer: peer, hosts: make(map[string]events.ReadHost, len(whole.Set))}
	if prev != nil && !whole.Complete {
		// An incomplete read removes nothing: the set keeps what it had.
		maps.Copy(next.hosts, prev.hosts)
	}
	delta := prev != nil && whole.Complete
	for _, row := range whole.Set {
		if row.MAC == "" {
			continue
		}
		var old events.ReadHost
		var had bool
		if prev != nil {
			old, had = prev.hosts[row.MAC]
		}
		if had && old.Signal != 0 && row.Signal != 0 && abs(old.Signal-row.Signal) < signalSlack {
			row.Signal = old.Signal
		}
		next.hosts[row.MAC] = row
		if !delta || !had || !sameHost(old, row) {
			p.Set = append(p.Set, row)
		}
	}
	if delta {
		p.Base = prev.Seq
		for mac := range prev.hosts {
			if _, ok := next.hosts[mac]; !ok {
				p.Gone = append(p.Gone, mac)
			}
		}
		slices.Sort(p.Gone)
	}
	slices.SortFunc(p.Set, func(a, b events.ReadHost) int {
		switch {
		case a.MAC < b.MAC:
			return -1
		case a.MAC > b.MAC:
			return 1
		}
		return 0
	})
	p.Hosts = len(next.hosts)
	if prev == nil || !samePeer(prev.peer, peer) || !delta {
		pp := peer
		p.Peer = &pp
	}
	return p, next
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
