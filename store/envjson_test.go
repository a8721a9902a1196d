package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

// envelopeCases are stored values, canonical and not, that the fast
// decoder must decode exactly as json.Unmarshal does (or leave to it).
func envelopeCases(t testing.TB) map[string][]byte {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	_, sweep := sealed(t, events.MustNew(events.KindSweepCompleted, events.SweepCompleted{
		ScanID: "s1", Started: at, Finished: at, Networks: []string{"10.0.0.0/24"}, Complete: true,
		Hosts: []events.SweepHost{{IP: "10.0.0.1", MAC: "00:11:22:33:44:55", Via: "icmp", Names: events.NamesOf(map[string]string{"dns": "a<b>&é"})}},
	}, at))
	_, all := sealed(t, events.Envelope{ID: "i", Time: at, Kind: events.KindClockTicked, V: 1,
		Source: "sweep:lan", Actor: "älice", Device: "dev1", Stream: "scan/x", Payload: json.RawMessage(`{"at":"2026-02-03T04:05:06Z"}`)})
	_, null := sealed(t, events.Envelope{ID: "i", Time: at, Kind: "device.edited", V: 1})
	s := string(all)
	return map[string][]byte{
		"sweep":                  sweep,
		"all optional fields":    all,
		"null payload":           null,
		"escaped id":             []byte(strings.Replace(s, `"id":"i"`, `"id":"\u0069"`, 1)),
		"whitespace":             []byte(strings.Replace(s, `{"seq":1,`, `{ "seq": 1, `, 1)),
		"payload whitespace":     []byte(strings.Replace(s, `{"at":`, "{ \"at\" :\n", 1)),
		"fields out of order":    []byte(strings.Replace(s, `{"seq":1,"id":"i",`, `{"id":"i","seq":1,`, 1)),
		"case-folded key":        []byte(strings.Replace(s, `"kind":`, `"KIND":`, 1)),
		"unknown field":          []byte(strings.Replace(s, `"v":1,`, `"v":1,"x":[1,{"y":null}],`, 1)),
		"seq with fraction":      []byte(strings.Replace(s, `"seq":1,`, `"seq":1.0,`, 1)),
		"seq exponent":           []byte(strings.Replace(s, `"seq":1,`, `"seq":1e2,`, 1)),
		"negative seq":           []byte(strings.Replace(s, `"seq":1,`, `"seq":-1,`, 1)),
		"seq leading zero":       []byte(strings.Replace(s, `"seq":1,`, `"seq":01,`, 1)),
		"seq overflow":           []byte(strings.Replace(s, `"seq":1,`, `"seq":18446744073709551616,`, 1)),
		"seq max":                []byte(strings.Replace(s, `"seq":1,`, `"seq":18446744073709551615,`, 1)),
		"v huge":                 []byte(strings.Replace(s, `"v":1,`, `"v":9223372036854775807,`, 1)),
		"v negative":             []byte(strings.Replace(s, `"v":1,`, `"v":-2,`, 1)),
		"bad time":               []byte(strings.Replace(s, `"time":"2026-02-03T04:05:06.000007Z"`, `"time":"yesterday"`, 1)),
		"time not UTC":           []byte(strings.Replace(s, `"time":"2026-02-03T04:05:06.000007Z"`, `"time":"2026-02-03T04:05:06+02:00"`, 1)),
		"invalid utf-8 source":   []byte(strings.Replace(s, `"source":"sweep:lan"`, "\"source\":\"sweep\xff\"", 1)),
		"control char":           []byte(strings.Replace(s, `"source":"sweep:lan"`, "\"source\":\"a\x01\"", 1)),
		"payload bad number":     []byte(strings.Replace(s, `"payload":{`, `"payload":{"n":01,`, 1)),
		"payload bad escape":     []byte(strings.Replace(s, `"payload":{`, `"payload":{"n":"\x",`, 1)),
		"payload short escape":   []byte(strings.Replace(s, `"payload":{`, `"payload":{"n":"\u12",`, 1)),
		"payload unicode":        []byte(strings.Replace(s, `"payload":{`, `"payload":{"n":"\ud800\u00e9 ü\xff",`, 1)),
		"payload trailing comma": []byte(strings.Replace(s, `"payload":{"at"`, `"payload":{"a":[1,],"at"`, 1)),
		"payload deep":           []byte(strings.Replace(s, `"payload":{`, `"payload":{"d":`+strings.Repeat("[", 300)+strings.Repeat("]", 300)+`,`, 1)),
		"payload literals":       []byte(strings.Replace(s, `"payload":{`, `"payload":{"t":true,"f":false,"n":null,"x":-0.5e+3,`, 1)),
		"payload bad literal":    []byte(strings.Replace(s, `"payload":{`, `"payload":{"t":tru,`, 1)),
		"trailing garbage":       append(append([]byte(nil), all...), 'x'),
		"trailing space":         append(append([]byte(nil), all...), ' '),
		"truncated":              all[:len(all)-2],
		"empty":                  {},
		"null":                   []byte(`null`),
	}
}

func TestDecodeEnvelopeIsUnmarshal(t *testing.T) {
	for name, v := range envelopeCases(t) {
		t.Run(name, func(t *testing.T) { checkDecodeEnvelope(t, v) })
	}
}

func TestDecodeEnvelopeFastPath(t *testing.T) {
	for _, name := range []string{"sweep", "all optional fields", "null payload"} {
		v := envelopeCases(t)[name]
		if _, ok := splitEnvelope(v); !ok {
			t.Errorf("%s: the canonical stored value is not on the fast path:\n%s", name, v)
		}
	}
}

// checkDecodeEnvelope fails unless decodeEnvelope(v) is json.Unmarshal's
// result (or both fail).
func checkDecodeEnvelope(t *testing.T, v []byte) {
	t.Helper()
	got, err := decodeEnvelope(v)
	var want events.Envelope
	werr := json.Unmarshal(v, &want)
	if (err == nil) != (werr == nil) {
		t.Fatalf("decodeEnvelope(%q) error %v, json.Unmarshal error %v", v, err, werr)
	}
	if err != nil {
		return
	}
	// Compare times by their encoding too: equal instants in different
	// locations are different results.
	if !reflect.DeepEqual(got, want) || got.Time.String() != want.Time.String() {
		t.Fatalf("decodeEnvelope(%q)\n got %#v\nwant %#v", v, got, want)
	}
}

// FuzzDecodeEnvelope: the fast decoder of stored values agrees with
// json.Unmarshal on every input, and never panics.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, v := range envelopeCases(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) { checkDecodeEnvelope(t, v) })
}

// BenchmarkDecodeEnvelope decodes a stored two-host sweep (the replay
// benchmark's kind of event) with the fast decoder and with
// encoding/json.
func BenchmarkDecodeEnvelope(b *testing.B) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	e := events.MustNew(events.KindSweepCompleted, events.SweepCompleted{ScanID: "12345", Started: at.Add(-time.Second), Finished: at,
		Networks: []string{"10.0.0.0/8"}, ProbesSent: 2, Complete: true, Hosts: []events.SweepHost{
			{IP: "10.0.1.17", Network: "10.0.0.0/8", MAC: "00:11:22:00:01:11", RTTMicros: 700, Via: "icmp", Names: events.NamesOf(map[string]string{"dns": "host-273.lab"})},
			{IP: "10.0.1.18", Network: "10.0.0.0/8", MAC: "00:11:22:00:01:12", RTTMicros: 700, Via: "icmp", Names: events.NamesOf(map[string]string{"dns": "host-274.lab"})},
		}}, at)
	e.Source = "sweep:bench"
	_, v := sealed(b, e)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			if _, err := decodeEnvelope(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			var e events.Envelope
			if err := json.Unmarshal(v, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
