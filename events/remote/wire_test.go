package remote

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/jocasta/jocasta/events"
)

func TestEncodeDecode(t *testing.T) {
	small := testEvent(t, "small")
	big := testEvent(t, "big")
	big.Payload, _ = json.Marshal(events.ScanFailed{ScanID: "big", Reason: strings.Repeat("many hosts ", 5000)})
	for _, e := range []events.Envelope{small, big} {
		o := Observation{Sensor: "site-a", Kind: "sweep", Interval: time.Minute, Sent: time.Unix(5, 6), Event: e}
		m, err := Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		if m.UUID != e.ID || m.Metadata.Get(HeaderMsgID) != e.ID {
			t.Fatalf("ids: uuid %s msg-id %s, want %s", m.UUID, m.Metadata.Get(HeaderMsgID), e.ID)
		}
		if gz := m.Metadata.Get(HeaderEncoding) == "gzip"; gz != (len(e.Payload) > gzipAbove) {
			t.Errorf("%s: gzip %v for %d bytes", e.ID, gz, len(e.Payload))
		}
		got, err := Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		if got.Sensor != "site-a" || got.Kind != "sweep" || got.Interval != time.Minute || !got.Sent.Equal(o.Sent) ||
			got.Event.ID != e.ID || !got.Event.Time.Equal(e.Time) || got.Event.Kind != e.Kind || got.Event.Source != e.Source ||
			got.Event.Stream != e.Stream || string(got.Event.Payload) != string(e.Payload) || got.Event.V != e.V {
			t.Errorf("round trip: %+v\nwant %+v", got, o)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := func() *message.Message {
		m, err := Encode(Observation{Sensor: "a", Kind: "sweep", Event: testEvent(t, "s")})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name   string
		change func(m *message.Message)
	}{
		{"no sensor", func(m *message.Message) { m.Metadata.Set(HeaderSensor, "") }},
		{"bad sensor name", func(m *message.Message) { m.Metadata.Set(HeaderSensor, "Site A") }},
		{"not json", func(m *message.Message) { m.Payload = []byte("{") }},
		{"id differs from msg id", func(m *message.Message) { m.UUID = strings.Repeat("0", 32) }},
		{"unknown encoding", func(m *message.Message) { m.Metadata.Set(HeaderEncoding, "zstd") }},
		{"corrupt gzip", func(m *message.Message) { m.Metadata.Set(HeaderEncoding, "gzip") }},
		{"no time", func(m *message.Message) {
			m.Payload = []byte(strings.Replace(string(m.Payload), `"time":"2023-11-14T22:13:20Z"`, `"time":"0001-01-01T00:00:00Z"`, 1))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.change(m)
			if _, err := Decode(m); !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want ErrRefused", err)
			}
		})
	}
	if _, err := Decode(good()); err != nil {
		t.Fatalf("the unchanged message: %v", err)
	}
	if _, err := Encode(Observation{Sensor: "a", Event: events.Envelope{ID: "short"}}); err == nil {
		t.Fatal("encoded an observation without a proper id")
	}
}
