// Package inventorytest is a harness over a real inventory for the tests
// of packages beside it (the presence clock, retention): a bbolt file in
// t.TempDir, events applied as the runner applies them, and an appender
// that applies what it is given at once, standing in for store + runner.
package inventorytest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Network is the network the harness's sweeps cover.
const Network = "10.0.0.0/24"

// Harness is an inventory with a file of its own.
type Harness struct {
	t   testing.TB
	db  *bolt.DB
	Inv *inventory.Inventory

	mu       sync.Mutex
	seq      uint64
	appended []events.Envelope
	// Fail, while set, makes Append fail with it.
	Fail error
}

// New opens a harness; it closes with the test.
func New(t testing.TB, opts inventory.Options) *Harness {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "inv.db"), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	inv, err := inventory.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range inv.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return inv.Load(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{t: t, db: db, Inv: inv}
}

// apply gives ev the next seq and applies it.
func (h *Harness) apply(ev events.Envelope) events.Envelope {
	h.seq++
	ev.Seq = h.seq
	if ev.ID == "" {
		ev.ID = fmt.Sprintf("%032x", h.seq)
	}
	err := h.db.Update(func(tx *bolt.Tx) error {
		if err := h.Inv.Apply(tx, ev); err != nil {
			return err
		}
		return h.Inv.Flush(tx)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return ev
}

// Apply applies one event of kind.
func (h *Harness) Apply(kind string, payload any, at time.Time, source, actor, device string) {
	h.t.Helper()
	ev := events.MustNew(kind, payload, at)
	ev.Source, ev.Actor, ev.Device = source, actor, device
	h.mu.Lock()
	defer h.mu.Unlock()
	h.apply(ev)
}

// Append applies evs at once and records them (an Appender).
func (h *Harness) Append(_ context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Fail != nil {
		return nil, h.Fail
	}
	out := make([]events.Envelope, len(evs))
	for k, ev := range evs {
		out[k] = h.apply(ev)
		h.appended = append(h.appended, out[k])
	}
	return out, nil
}

// SetFail sets or clears the error Append fails with.
func (h *Harness) SetFail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Fail = err
}

// Appended returns what Append was given.
func (h *Harness) Appended() []events.Envelope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]events.Envelope(nil), h.appended...)
}

// Host is a responder of Network.
func Host(ip, mac string) events.SweepHost {
	return events.SweepHost{IP: ip, Network: Network, MAC: mac, Via: "icmp", RTTMicros: 800}
}

// Sweep applies a sweep of Network finishing at fin (started 10 s
// before), complete or not.
func (h *Harness) Sweep(fin time.Time, complete bool, hosts ...events.SweepHost) {
	h.t.Helper()
	s := events.SweepCompleted{
		ScanID: "s" + fin.Format("150405"), Started: fin.Add(-10 * time.Second), Finished: fin,
		Networks: []string{Network}, ProbesSent: 254, Complete: complete, Hosts: hosts,
	}
	if !complete {
		s.Errors = []string{"send: network is unreachable"}
	}
	h.Apply(events.KindSweepCompleted, s, fin, "sweep:lab", "", "")
}

// Devices lists every device.
func (h *Harness) Devices() []projections.Device {
	h.t.Helper()
	p, err := h.Inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: inventory.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.Items
}

// Device is the device holding ip (a current address); the test fails
// when there is none.
func (h *Harness) Device(ip string) projections.Device {
	h.t.Helper()
	for _, d := range h.Devices() {
		for _, a := range d.Addresses {
			if a.IP == ip && a.RetiredAt == nil {
				return d
			}
		}
	}
	h.t.Fatalf("no device holds %s", ip)
	return projections.Device{}
}
