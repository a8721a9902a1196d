package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

type failingLog struct {
	memLog
	fail bool
}

func (f *failingLog) Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	if f.fail {
		return nil, errors.New("disk full")
	}
	return f.memLog.Append(ctx, evs...)
}

func hostRead(complete bool, hosts ...*sources.ReadHost) *sources.HostRead {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	return &sources.HostRead{ScanID: "r", Started: t0, Finished: t0.Add(time.Second), Complete: complete, Rows: len(hosts),
		Peer: sources.Peer{Name: "core", MACs: []string{"02:00:00:00:00:01"}}, Hosts: hosts}
}

func rh(mac, ip string, seen bool, signal int) *sources.ReadHost {
	h := &sources.ReadHost{MAC: mac, Seen: seen, Signal: signal}
	if ip != "" {
		h.IPs = []netip.Addr{netip.MustParseAddr(ip)}
	}
	return h
}

func payload(t *testing.T, e events.Envelope) events.PluginRead {
	t.Helper()
	var p events.PluginRead
	if err := events.Default.DecodeInto(e, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func macs(hs []events.ReadHost) string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s/%d", h.MAC, h.Signal))
	}
	return strings.Join(out, ",")
}

func TestPluginReadDifferences(t *testing.T) {
	log := &failingLog{}
	s := NewSink(log)
	inst := sources.Instance{Source: "routerapi:core", Kind: "routerapi"}
	record := func(r *sources.HostRead) events.PluginRead {
		t.Helper()
		if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: r}); err != nil {
			t.Fatal(err)
		}
		return payload(t, log.got[len(log.got)-1])
	}
	a := rh("02:00:00:00:00:0a", "192.0.2.10", true, 0)
	b := rh("02:00:00:00:00:0b", "192.0.2.11", false, 0)
	c := rh("02:00:00:00:00:0c", "", true, -60)

	// The first read is whole, with its peer.
	p := record(hostRead(true, a, b, c))
	if p.Base != 0 || macs(p.Set) != "02:00:00:00:00:0a/0,02:00:00:00:00:0b/0,02:00:00:00:00:0c/-60" || p.Peer == nil || p.Hosts != 3 {
		t.Fatalf("first read: %+v", p)
	}
	// The same network again, the signal jittering by 3 dB: nothing set,
	// nothing gone, no peer, based on the first.
	c2 := rh("02:00:00:00:00:0c", "", true, -63)
	p = record(hostRead(true, a, b, c2))
	if p.Base != 1 || len(p.Set) != 0 || len(p.Gone) != 0 || p.Peer != nil || p.Hosts != 3 {
		t.Fatalf("unchanged read: %+v", p)
	}
	if n := len(log.got[1].Payload); n > 250 {
		t.Errorf("an unchanged read is %d bytes of payload", n)
	}
	// b is seen now, c's signal moved 10 dB, a is gone.
	b2 := rh("02:00:00:00:00:0b", "192.0.2.11", true, 0)
	c3 := rh("02:00:00:00:00:0c", "", true, -70)
	p = record(hostRead(true, b2, c3))
	if p.Base != 2 || macs(p.Set) != "02:00:00:00:00:0b/0,02:00:00:00:00:0c/-70" || strings.Join(p.Gone, ",") != "02:00:00:00:00:0a" || p.Hosts != 2 {
		t.Fatalf("changed read: %+v", p)
	}
	// An incomplete read: whole (base 0), nothing gone, the set keeps b.
	p = record(hostRead(false, c3))
	if p.Base != 0 || macs(p.Set) != "02:00:00:00:00:0c/-70" || len(p.Gone) != 0 || p.Hosts != 2 {
		t.Fatalf("incomplete read: %+v", p)
	}
	// A failed append drops the base: the next read is whole.
	log.fail = true
	if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: hostRead(true, b2)}); err == nil {
		t.Fatal("append error lost")
	}
	log.fail = false
	p = record(hostRead(true, b2, c3))
	if p.Base != 0 || len(p.Set) != 2 {
		t.Fatalf("after a failed append: %+v", p)
	}
	// Another source has its own base.
	inst2 := sources.Instance{Source: "rpcrouter:ap", Kind: "rpcrouter"}
	if err := s.Record(context.Background(), sources.Run{Instance: inst2, Result: hostRead(true, a)}); err != nil {
		t.Fatal(err)
	}
	if p := payload(t, log.got[len(log.got)-1]); p.Base != 0 || p.Kind != "rpcrouter" {
		t.Fatalf("second source: %+v", p)
	}
}

// The router's outside address travels with its peer: written when it
// changes (or the read is whole), not with every read.
func TestPluginReadOutsideAddress(t *testing.T) {
	log := &failingLog{}
	s := NewSink(log)
	inst := sources.Instance{Source: "routerapi:core", Kind: "routerapi"}
	a := rh("02:00:00:00:00:0a", "192.0.2.10", true, 0)
	record := func(outside string) events.PluginRead {
		t.Helper()
		r := hostRead(true, a)
		r.Peer.Outside = outside
		if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: r}); err != nil {
			t.Fatal(err)
		}
		return payload(t, log.got[len(log.got)-1])
	}
	for k, c := range []struct {
		outside string
		want    *string // the peer's outside in the payload; nil: no peer
	}{
		{"198.51.100.7", ptr("198.51.100.7")},
		{"198.51.100.7", nil},
		{"203.0.113.9", ptr("203.0.113.9")},
		{"", ptr("")},
		{"", nil},
	} {
		p := record(c.outside)
		switch {
		case c.want == nil && p.Peer != nil:
			t.Errorf("read %d: peer %+v written, the outside address unchanged", k, *p.Peer)
		case c.want != nil && (p.Peer == nil || p.Peer.Outside != *c.want):
			t.Errorf("read %d: peer %+v, want outside %q", k, p.Peer, *c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
