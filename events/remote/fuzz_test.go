package remote

import (
	"context"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store/storetest"
)

// FuzzCentralMessage feeds a message body and its headers, as a sensor
// (or anyone holding a sensor's password) could send them, through
// Decode and the central's Handle: nothing may panic, a message that does
// not decode is refused (ErrRefused), and what Handle appends keeps the
// log verifiable. The seeds are a sweep and plugin reads (whole, then
// the same again, which the central writes as a difference), a port
// scan, and broken variants. Run with go test -fuzz FuzzCentralMessage
// ./events/remote/.
func FuzzCentralMessage(f *testing.F) {
	seed := func(kind string, run sources.Run) {
		e, err := ingest.RunEvent(run)
		if err != nil {
			f.Fatal(err)
		}
		m, err := Encode(Observation{Sensor: "a", Kind: kind, Event: e, Interval: time.Minute})
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(m.Payload), m.Metadata.Get(HeaderSensor), m.Metadata.Get(HeaderKind), m.Metadata.Get(HeaderEncoding), m.UUID)
	}
	now := time.Unix(1700000000, 0).UTC()
	read := &sources.HostRead{ScanID: "r1", Started: now, Finished: now, Complete: true, Rows: 2, Peer: sources.Peer{Name: "core"},
		Hosts: []*sources.ReadHost{{MAC: "02:00:00:00:00:01", Seen: true, Signal: -60}, {MAC: "02:00:00:00:00:02", Port: "ether2"}}}
	routerapi := sources.Instance{Source: "routerapi:core", Kind: "routerapi"}
	seed("routerapi", sources.Run{Instance: routerapi, Result: read})
	seed("routerapi", sources.Run{Instance: routerapi, Result: read})
	sw := &sources.Sweep{ScanID: "s1", Started: now, Finished: now, Complete: true}
	seed("sweep", sources.Run{Instance: sources.Instance{Source: "sweep:site", Kind: "sweep"}, Result: sw})
	f.Add([]byte(`{"id":"00112233445566778899aabbccddeeff","time":"2023-11-14T22:13:20Z","kind":"plugin.read","v":1,"source":"routerapi:x","payload":{"set":[{"mac":"02:00:00:00:00:01"}],"gone":["x"]}}`),
		"a", "routerapi", "", "00112233445566778899aabbccddeeff")
	f.Add([]byte("\x1f\x8b\x08\x00"), "a", "sweep", "gzip", "00112233445566778899aabbccddeeff")

	st := storetest.Open(f)
	c := NewCentral(st, CentralOptions{Allowed: []string{"a", "b"}, Now: func() time.Time { return now }})
	if err := c.Init(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, sensor, kind, encoding, id string) {
		m := message.NewMessage(id, body)
		m.Metadata.Set(HeaderMsgID, id)
		m.Metadata.Set(HeaderSensor, sensor)
		m.Metadata.Set(HeaderKind, kind)
		if encoding != "" {
			m.Metadata.Set(HeaderEncoding, encoding)
		}
		o, err := Decode(m)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Decode: %v, want ErrRefused", err)
			}
			return
		}
		if _, err := c.Handle(context.Background(), o); err != nil && !errors.Is(err, ErrRefused) {
			t.Fatalf("Handle: %v", err)
		}
	})
	if _, err := st.Verify(context.Background(), nil); err != nil {
		f.Fatalf("the log no longer verifies: %v", err)
	}
	// Run as a plain test (the seeds only, in this process), the three
	// good seeds are appended: the read, the read again as a difference,
	// the sweep.
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() == "" && st.Head() != 3 {
		f.Fatalf("the seeds appended %d events, want 3", st.Head())
	}
}
