package events

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// fastCases are payloads, canonical and not, that the fast parsers must
// decode exactly as json.Unmarshal does (or leave to it).
func fastCases(t testing.TB) map[string]string {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	full, err := json.Marshal(SweepCompleted{
		ScanID: "s1", Started: at.Add(-time.Second), Finished: at, Networks: []string{"10.0.0.0/24", "fd00::/64"},
		ProbesSent: 254, Complete: true, Errors: []string{"eth1: down"},
		Hosts: []SweepHost{
			{IP: "10.0.0.1", Network: "10.0.0.0/24", MAC: "00:11:22:33:44:55", RTTMicros: 700, Via: "icmp",
				Names:    NamesOf(map[string]string{"dns": "router.lan", "mdns": "Router Ünïcode"}),
				Services: []Service{{Instance: "Web", Type: "_http._tcp", Port: 80}, {Instance: "x", Type: "_ssh._tcp", Port: 65535}},
				UPnP:     &UPnP{FriendlyName: "Box", Manufacturer: "ACME", ModelName: "M1"}},
			{IP: "10.0.0.2", Via: "neighbour"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := json.Marshal(SweepCompleted{})
	s := string(full)
	return map[string]string{
		"full":               s,
		"zero":               string(empty),
		"empty object":       `{}`,
		"empty arrays":       `{"hosts":[],"networks":[],"errors":[]}`,
		"difference":         `{"scan_id":"d","base":41,"same":[0,500,3,-1],"hosts":[{"ip":"10.0.0.9","via":"arp"}]}`,
		"empty same":         `{"base":1,"same":[]}`,
		"null same":          `{"same":null}`,
		"spaced same":        `{"base":2,"same" : [ 7 , 8 ,9 ] }`,
		"spaced empty same":  `{"base":2,"same":[ ]}`,
		"bad same":           `{"same":[1.5]}`,
		"negative base":      `{"base":-1}`,
		"empty names":        `{"hosts":[{"ip":"1.2.3.4","names":{},"services":[],"upnp":{}}]}`,
		"whitespace":         " {\n\t\"scan_id\" : \"a\" , \"hosts\" : [ { \"ip\" : \"1.2.3.4\" , \"rtt_us\" : -5 } ] }\r\n",
		"reordered":          `{"hosts":[{"via":"icmp","ip":"1.2.3.4"}],"complete":false,"scan_id":"x"}`,
		"duplicate key":      `{"scan_id":"a","scan_id":"b"}`,
		"duplicate names":    `{"hosts":[{"names":{"dns":"a"},"names":{"mdns":"b"}}]}`,
		"duplicate name key": `{"hosts":[{"names":{"dns":"a","dns":"b"}}]}`,
		"case-folded key":    `{"Scan_ID":"a"}`,
		"unknown key":        `{"x":1,"scan_id":"a"}`,
		"escaped string":     `{"scan_id":"a\u003cb"}`,
		"escaped key":        `{"scan\u005fid":"a"}`,
		"html":               `{"hosts":[{"names":{"dns":"<a&b>"}}]}`,
		"invalid utf-8":      "{\"scan_id\":\"a\xffb\"}",
		"control char":       "{\"scan_id\":\"a\x01b\"}",
		"null field":         `{"scan_id":null,"hosts":null}`,
		"null hosts":         `{"scan_id":"s","complete":true,"hosts": null}`,
		"null host":          `{"hosts":[null]}`,
		"null upnp":          `{"hosts":[{"upnp":null}]}`,
		"null name":          `{"hosts":[{"names":{"dns":null}}]}`,
		"fraction":           `{"probes_sent":1.5}`,
		"exponent":           `{"probes_sent":1e3}`,
		"leading zero":       `{"probes_sent":012}`,
		"negative zero":      `{"probes_sent":-0}`,
		"big int":            `{"probes_sent":9223372036854775807}`,
		"too big int":        `{"probes_sent":9223372036854775808}`,
		"port too big":       `{"hosts":[{"services":[{"port":65536}]}]}`,
		"port negative":      `{"hosts":[{"services":[{"port":-1}]}]}`,
		"string for int":     `{"probes_sent":"1"}`,
		"bad time":           `{"started":"yesterday"}`,
		"offset time":        `{"started":"2026-02-03T04:05:06+02:00"}`,
		"bool":               `{"complete":true}`,
		"bad bool":           `{"complete":tru}`,
		"trailing comma":     `{"scan_id":"a",}`,
		"trailing garbage":   `{"scan_id":"a"}x`,
		"truncated":          s[:len(s)/2],
		"array":              `[]`,
		"null":               `null`,
		"empty":              ``,
		"clock":              `{"at":"2026-02-03T04:05:06.000007Z"}`,
		"clock dup":          `{"at":"2026-02-03T04:05:06Z","at":"2026-02-03T04:05:07Z"}`,
		"clock empty":        `{}`,
	}
}

func TestFastDecodeIsUnmarshal(t *testing.T) {
	for name, p := range fastCases(t) {
		t.Run(name, func(t *testing.T) { checkFastDecode(t, []byte(p)) })
	}
}

func TestFastDecodeTakesCanonical(t *testing.T) {
	c := fastCases(t)
	var s SweepCompleted
	if !decodeSweepCompleted([]byte(c["full"]), &s) {
		t.Errorf("json.Marshal of a sweep is not on the fast path: %s", c["full"])
	}
	var k ClockTicked
	if !decodeClockTicked([]byte(c["clock"]), &k) {
		t.Errorf("json.Marshal of a clock tick is not on the fast path")
	}
}

// TestFastDecodeMergesLikeUnmarshal: a non-zero destination is left to
// json.Unmarshal, which merges into it.
func TestFastDecodeMergesLikeUnmarshal(t *testing.T) {
	dst := SweepCompleted{ScanID: "keep", ProbesSent: 3}
	e := Envelope{Kind: KindSweepCompleted, V: 1, Payload: json.RawMessage(`{"complete":true}`)}
	if err := DecodeInto(e, &dst); err != nil {
		t.Fatal(err)
	}
	if dst.ScanID != "keep" || dst.ProbesSent != 3 || !dst.Complete {
		t.Errorf("got %+v, want the payload merged into the existing value", dst)
	}
}

// checkFastDecode fails unless DecodeInto and Decode give json.Unmarshal's
// result (or all fail) for p as both payload types.
func checkFastDecode(t *testing.T, p []byte) {
	t.Helper()
	for _, c := range []struct {
		kind string
		typ  reflect.Type
	}{
		{KindSweepCompleted, reflect.TypeFor[SweepCompleted]()},
		{KindClockTicked, reflect.TypeFor[ClockTicked]()},
	} {
		want := reflect.New(c.typ).Interface()
		werr := json.Unmarshal(p, want)
		e := Envelope{Seq: 1, Kind: c.kind, V: 1, Payload: p}
		got := reflect.New(c.typ).Interface()
		err := DecodeInto(e, got)
		got2, err2 := Decode(e)
		for k, r := range []struct {
			got any
			err error
		}{{got, err}, {got2, err2}} {
			if (r.err == nil) != (werr == nil) {
				t.Fatalf("%s #%d of %q: error %v, json.Unmarshal error %v", c.kind, k, p, r.err, werr)
			}
			if r.err == nil && !equalPayload(r.got, want) {
				t.Fatalf("%s #%d of %q:\n got %#v\nwant %#v", c.kind, k, p, r.got, want)
			}
		}
	}
}

// equalPayload is reflect.DeepEqual, which also tells apart equal
// instants in different locations (time.Time's loc pointer).
func equalPayload(a, b any) bool {
	return reflect.DeepEqual(a, b)
}

// FuzzFastDecode: the fast payload parsers agree with json.Unmarshal on
// every input, and never panic.
func FuzzFastDecode(f *testing.F) {
	for _, p := range fastCases(f) {
		f.Add([]byte(p))
	}
	f.Add([]byte(strings.Repeat(`{"hosts":[`, 3)))
	f.Fuzz(func(t *testing.T, p []byte) { checkFastDecode(t, p) })
}

// BenchmarkDecodeSweep decodes a two-host sweep (the replay benchmark's
// kind of event) with the fast parser and with encoding/json.
func BenchmarkDecodeSweep(b *testing.B) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	p, err := json.Marshal(SweepCompleted{ScanID: "12345", Started: at.Add(-time.Second), Finished: at,
		Networks: []string{"10.0.0.0/8"}, ProbesSent: 2, Complete: true, Hosts: []SweepHost{
			{IP: "10.0.1.17", Network: "10.0.0.0/8", MAC: "00:11:22:00:01:11", RTTMicros: 700, Via: "icmp", Names: NamesOf(map[string]string{"dns": "host-273.lab"})},
			{IP: "10.0.1.18", Network: "10.0.0.0/8", MAC: "00:11:22:00:01:12", RTTMicros: 700, Via: "icmp", Names: NamesOf(map[string]string{"dns": "host-274.lab"})},
		}})
	if err != nil {
		b.Fatal(err)
	}
	e := Envelope{Kind: KindSweepCompleted, V: 1, Payload: p}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s SweepCompleted
			if err := DecodeInto(e, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s SweepCompleted
			if err := json.Unmarshal(p, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeSweepDifference decodes a sweep of 1,000 hosts written
// by difference: every host answered as before, so the payload is
// mostly its "same" numbers (the 90-day replay's kind of event; "hosts"
// is [], as ingest writes it, since null goes to encoding/json).
func BenchmarkDecodeSweepDifference(b *testing.B) {
	same := make([]int64, 0, 2000)
	for k := range 1000 {
		same = append(same, int64(k), int64(300+k%700))
	}
	p, err := json.Marshal(SweepCompleted{ScanID: "12345", Networks: []string{"10.0.0.0/22"}, ProbesSent: 1000,
		Complete: true, Base: 41, Same: same, Hosts: []SweepHost{}})
	if err != nil {
		b.Fatal(err)
	}
	e := Envelope{Kind: KindSweepCompleted, V: 2, Payload: p}
	if !decodeSweepCompleted(p, &SweepCompleted{}) {
		b.Fatal("not on the fast parser's path")
	}
	b.ReportAllocs()
	for b.Loop() {
		var s SweepCompleted
		if err := DecodeInto(e, &s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSweepCompletedIsZero: isZero sees every field, so a destination with
// any field set is left to json.Unmarshal to merge into.
func TestSweepCompletedIsZero(t *testing.T) {
	if !(&SweepCompleted{}).isZero() {
		t.Fatal("zero SweepCompleted: isZero false")
	}
	typ := reflect.TypeFor[SweepCompleted]()
	for i := range typ.NumField() {
		var v SweepCompleted
		f := reflect.ValueOf(&v).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		case reflect.Struct: // time.Time
			f.Set(reflect.ValueOf(time.Unix(0, 0)))
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(1)
		case reflect.Uint64:
			f.SetUint(1)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("field %s: kind %s not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if v.isZero() {
			t.Errorf("isZero ignores field %s", typ.Field(i).Name)
		}
	}
}

// A host's strings are shared between payloads through a bounded table:
// the same bytes give the one copy, constants stay constants, and a full
// table starts over rather than growing.
func TestStringTable(t *testing.T) {
	tab := &stringTable{m: map[string]string{}}
	a := tab.get([]byte("10.0.0.9"))
	b := tab.get([]byte("10.0.0.9"))
	if a != "10.0.0.9" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("get twice = %q at %p and %q at %p; want one copy", a, unsafe.StringData(a), b, unsafe.StringData(b))
	}
	if s := tab.get([]byte("icmp")); unsafe.StringData(s) != unsafe.StringData("icmp") || len(tab.m) != 1 {
		t.Errorf("a constant was copied into the table (%d strings)", len(tab.m))
	}
	for i := range maxTableStrings + 10 {
		tab.get([]byte(strconv.Itoa(i)))
	}
	if len(tab.m) > maxTableStrings {
		t.Errorf("the table holds %d strings, over its bound %d", len(tab.m), maxTableStrings)
	}
	if c := tab.get([]byte("10.0.0.9")); c != "10.0.0.9" {
		t.Errorf("after starting over get = %q", c)
	}
}

// A whole sweep that found nobody ("hosts": null, as events.New writes a
// nil Hosts) stays on the fast parser's path.
func TestFastDecodeNullHosts(t *testing.T) {
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	p, err := json.Marshal(SweepCompleted{ScanID: "s", Started: at, Finished: at, Networks: []string{"10.0.0.0/24"}, Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	var s SweepCompleted
	if !decodeSweepCompleted(p, &s) || s.Hosts != nil || s.ScanID != "s" || !s.Complete {
		t.Errorf("%s: fast path %+v", p, s)
	}
}
