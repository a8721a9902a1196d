package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

// sweepEvent is a typical sweep.completed: n hosts with MACs, round trips
// and names, one with services and one with a UPnP description.
func sweepEvent(tb testing.TB, n int, at time.Time) events.Envelope {
	tb.Helper()
	p := events.SweepCompleted{
		ScanID:     events.NewID(),
		Started:    at.Add(-3 * time.Second).UTC(),
		Finished:   at.UTC(),
		Networks:   []string{"192.168.1.0/24"},
		ProbesSent: 254,
		Complete:   true,
	}
	for i := range n {
		h := events.SweepHost{
			IP:        fmt.Sprintf("192.168.1.%d", 10+i),
			Network:   "192.168.1.0/24",
			MAC:       fmt.Sprintf("aa:bb:cc:dd:ee:%02x", i),
			RTTMicros: int64(400 + 37*i),
			Via:       "icmp",
			Names:     events.NamesOf(map[string]string{"dns": fmt.Sprintf("host%d.lan", i), "mdns": fmt.Sprintf("host%d.local", i)}),
		}
		if i == 1 {
			h.Services = []events.Service{{Instance: "Printer", Type: "_ipp._tcp", Port: 631}}
		}
		if i == 2 {
			h.UPnP = &events.UPnP{FriendlyName: "Living room TV", Manufacturer: "ACME", ModelName: "TV-9000"}
		}
		p.Hosts = append(p.Hosts, h)
	}
	e, err := events.New(events.KindSweepCompleted, p, at)
	if err != nil {
		tb.Fatal(err)
	}
	e.Source = "sweep:lan"
	e.Actor = "sweep:lan"
	e.Stream = "scan/" + p.ScanID
	return e
}

// tokenEvent is a token.created for name.
func tokenEvent(tb testing.TB, name string) events.Envelope {
	tb.Helper()
	id := events.NewID()
	e, err := events.New(events.KindTokenCreated, events.TokenCreated{
		TokenID: id, Name: name, Mode: events.ModeRead,
		SecretSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	}, time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	e.Source, e.Actor, e.Stream = "cli", "admin", "token/"+id
	return e
}

// appendN appends n sweep events one call each and returns them as stored.
func appendN(tb testing.TB, s *store.Store, n int, at time.Time) []events.Envelope {
	tb.Helper()
	var out []events.Envelope
	for i := range n {
		got, err := s.Append(tb.Context(), sweepEvent(tb, 2, at.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			tb.Fatalf("append %d: %v", i, err)
		}
		out = append(out, got...)
	}
	return out
}

// rawUpdate opens a closed store's file with bbolt
// directly and runs fn, the way damage would reach the file.
func rawUpdate(tb testing.TB, path string, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatalf("raw open: %v", err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		tb.Fatalf("raw update: %v", err)
	}
}

// key is an 8-byte big-endian seq.
func key(seq uint64) []byte {
	return []byte{byte(seq >> 56), byte(seq >> 48), byte(seq >> 40), byte(seq >> 32), byte(seq >> 24), byte(seq >> 16), byte(seq >> 8), byte(seq)}
}

// contextCancelled returns an already cancelled context.
func contextCancelled(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx, cancel
}
