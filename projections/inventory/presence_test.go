package inventory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// TestPresenceHeapInvariants drives random sweeps, port scans and clock
// ticks over a small network and checks, after every event, what the
// lazily re-keyed presence heap must guarantee: every online device that
// is not overdue is in it with a key no later than its last sighting,
// none of them is past the window at the time just evaluated (and no
// overdue device is within it), the top's
// key is exact, and NextPresenceDeadline is the earliest last sighting
// plus the window. At the end a reload must answer every query alike.
func TestPresenceHeapInvariants(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 42))
			h := newHarness(t, Options{})
			at := t0
			for n := 0; n < 400; n++ {
				at = at.Add(time.Duration(rnd.IntN(300)) * time.Second)
				switch k := rnd.IntN(10); {
				case k < 7:
					var hosts []events.SweepHost
					for range rnd.IntN(4) {
						d := rnd.IntN(12)
						hosts = append(hosts, host(fmt.Sprintf("10.0.0.%d", d+1), fmt.Sprintf("00:11:22:00:00:%02x", d+1)))
					}
					s := sweepAt(at, hosts...)
					if k == 0 {
						s.Complete = false
					}
					h.sweep(s)
				case k < 8:
					d := rnd.IntN(12)
					h.ports(events.PortScanCompleted{ScanID: fmt.Sprint("p", n), Started: at.Add(-time.Second), Finished: at,
						Ports: "22", Targets: 1, ProbesSent: 1, Complete: true,
						Results: []events.PortResult{{IP: fmt.Sprintf("10.0.0.%d", d+1), Open: []uint16{22}}}})
				default:
					h.tick(at)
				}
				checkPresenceHeap(t, h.inv, at)
			}
			h.checkReload()
		})
	}
}

func checkPresenceHeap(t *testing.T, inv *Inventory, at time.Time) {
	t.Helper()
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	window := inv.opts.OnlineWindow
	var earliest time.Time
	waiting := 0
	for _, d := range inv.devs {
		inHeap := d.heapIdx >= 0 && d.heapIdx < len(inv.heap) && inv.heap[d.heapIdx].d == d
		if d.Overdue && !d.LastSeen.Before(at.Add(-window)) {
			t.Fatalf("at %s: device %s last seen %s is overdue within the window", at, d.ID, d.LastSeen)
		}
		switch {
		case d.Presence != projections.PresenceOnline || d.Overdue:
			if inHeap {
				t.Fatalf("at %s: device %s (%s, overdue %v) is in the heap", at, d.ID, d.Presence, d.Overdue)
			}
		case !inHeap:
			t.Fatalf("at %s: online device %s is not in the heap", at, d.ID)
		case keyOf(d.LastSeen).sec < inv.heap[d.heapIdx].key.sec ||
			(keyOf(d.LastSeen).sec == inv.heap[d.heapIdx].key.sec && keyOf(d.LastSeen).nsec < inv.heap[d.heapIdx].key.nsec):
			t.Fatalf("at %s: device %s keyed %v after its last sighting %s", at, d.ID, inv.heap[d.heapIdx].key, d.LastSeen)
		case d.LastSeen.Before(at.Add(-window)):
			t.Fatalf("at %s: device %s last seen %s is past the window but neither overdue nor offline", at, d.ID, d.LastSeen)
		default:
			if waiting == 0 || d.LastSeen.Before(earliest) {
				earliest = d.LastSeen
			}
			waiting++
		}
	}
	if waiting != len(inv.heap) {
		t.Fatalf("at %s: heap holds %d entries for %d waiting devices", at, len(inv.heap), waiting)
	}
	if waiting > 0 && inv.heap[0].key != keyOf(inv.heap[0].d.LastSeen) {
		t.Fatalf("at %s: the top's key %v is stale (last seen %s)", at, inv.heap[0].key, inv.heap[0].d.LastSeen)
	}
	for j := 1; j < len(inv.heap); j++ {
		if inv.heap.less(j, (j-1)/2) {
			t.Fatalf("at %s: heap order broken at %d", at, j)
		}
	}
	inv.mu.RUnlock()
	dl, ok := inv.NextPresenceDeadline()
	inv.mu.RLock()
	if ok != (waiting > 0) || (ok && !dl.Equal(earliest.Add(window))) {
		t.Fatalf("at %s: deadline %s %v, want %s %v", at, dl, ok, earliest.Add(window), waiting > 0)
	}
}
