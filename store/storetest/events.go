package storetest

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

// FlowWindow is a flow window's traffic.recorded of n packed rows (about
// 20 bytes of payload each: 166,667 rows is the 3.7 MB of a window at
// 10,000 devices × 1,000 peers an hour), at t (now when zero), made
// from i so that two differ.
func FlowWindow(t testing.TB, i, n int, at time.Time) events.Envelope {
	t.Helper()
	rows, err := events.NewTrafficPacker(events.TrafficRecorded{ScanID: fmt.Sprint("w", i)}, n*20)
	if err != nil {
		t.Fatal(err)
	}
	for r := range n {
		if err := rows.Add(&events.TrafficRowAddrs{
			Src:   netip.AddrFrom4([4]byte{10, byte(i), byte(r >> 8), byte(r)}),
			Dst:   netip.AddrFrom4([4]byte{198, 18, byte(r >> 8), byte(r)}),
			Proto: 6, Port: 443, Bytes: uint64(1500 + r), Packets: 3, Flows: 1,
		}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := rows.Recorded(at)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "flowlistener:test"
	return e
}
