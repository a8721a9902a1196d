package events

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTrafficRecordedRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)
	in := TrafficRecorded{
		ScanID: "flowlistener:gw@1", Started: at.Add(-time.Minute), Finished: at, Complete: true, Listen: "[::]:2055",
		Datagrams: 3, Flows: 5, LostFlows: 1, Drops: map[string]uint64{"no_template": 1},
		Exporters: []TrafficExporter{{Addr: "192.0.2.1", Versions: []int{9}, Domains: 1, Templates: 2, Datagrams: 3, Flows: 5, Sampling: 1}},
		Rows: []TrafficRow{
			{Src: "192.0.2.10", Dst: "198.51.100.7", Proto: 6, Port: 443, Bytes: 1500, Packets: 10, Flows: 2},
			{Src: "2001:db8::1", Dst: "::ffff:198.51.100.7", Proto: 58, Bytes: 1 << 40, Packets: 1, Flows: 1},
		},
	}
	e, err := New(KindTrafficRecorded, in, at)
	if err != nil {
		t.Fatal(err)
	}
	if e.V != 2 {
		t.Fatalf("written as v%d", e.V)
	}
	// Rows are packed: one string, no per-row keys (the IPv4 row is 16
	// bytes, the IPv6 one 43: 59, 80 in base64).
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &raw); err != nil {
		t.Fatal(err)
	}
	if r := string(raw["rows"]); !strings.HasPrefix(r, `"`) || len(r) != 2+80 {
		t.Fatalf("rows not packed: %s", r)
	}
	got, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*TrafficRecorded)
	if !reflect.DeepEqual(out.Rows, in.Rows) || out.Exporters[0].Addr != "192.0.2.1" || out.Drops["no_template"] != 1 || !out.Finished.Equal(at) {
		t.Fatalf("round trip: %+v", out)
	}
}

// TestTrafficRecordedV1: a v1 event (rows as an array of objects) in an
// old log still decodes, through the upcast, to the same rows, and
// EachTrafficRow reads both forms alike.
func TestTrafficRecordedV1(t *testing.T) {
	v1 := `{"scan_id":"flowlistener:gw@1","started":"2026-03-01T10:00:00Z","finished":"2026-03-01T10:01:00Z","complete":true,"listen":"[::]:2055","datagrams":3,"flows":5,"lost_flows":0,"exporters":[],` +
		`"rows":[{"s":"192.0.2.10","d":"198.51.100.7","p":6,"port":443,"b":1500,"n":10,"f":2},{"s":"2001:db8::1","d":"1.1.1.1","p":1,"b":64,"n":1,"f":1}]}`
	old := Envelope{Seq: 7, Kind: KindTrafficRecorded, V: 1, Payload: json.RawMessage(v1)}
	got, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	rows := got.(*TrafficRecorded).Rows
	want := TrafficRows{
		{Src: "192.0.2.10", Dst: "198.51.100.7", Proto: 6, Port: 443, Bytes: 1500, Packets: 10, Flows: 2},
		{Src: "2001:db8::1", Dst: "1.1.1.1", Proto: 1, Bytes: 64, Packets: 1, Flows: 1},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("v1 rows %+v", rows)
	}
	// The same window written now (v2) walks to the same rows.
	now, err := New(KindTrafficRecorded, TrafficRecorded{Rows: want}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	walk := func(payload []byte) []TrafficRowAddrs {
		var out []TrafficRowAddrs
		if err := EachTrafficRow(payload, func(r *TrafficRowAddrs) error { out = append(out, *r); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	p1, err := Default.Upcast(old)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := walk(p1), walk(now.Payload); len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Fatalf("v1 walk %+v, v2 walk %+v", a, b)
	}
	// Packed once (PackedTrafficRows), both walk to the same rows again,
	// a row's offset naming it.
	for _, payload := range [][]byte{p1, now.Payload} {
		packed, err := PackedTrafficRows(payload)
		if err != nil {
			t.Fatal(err)
		}
		var out []TrafficRowAddrs
		var offs []int
		for rest := packed; len(rest) > 0; {
			offs = append(offs, len(packed)-len(rest))
			var r TrafficRowAddrs
			if rest, err = NextTrafficRow(rest, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if !reflect.DeepEqual(out, walk(now.Payload)) {
			t.Fatalf("packed walk %+v", out)
		}
		var r TrafficRowAddrs
		if _, err := NextTrafficRow(packed[offs[1]:], &r); err != nil || r != out[1] {
			t.Fatalf("row at offset %d: %+v %v", offs[1], r, err)
		}
	}
	if _, err := PackedTrafficRows([]byte(`{"rows":"!!"}`)); err == nil {
		t.Fatal("bad base64 packed")
	}
}

func TestTrafficRowsMalformed(t *testing.T) {
	for _, tc := range []struct{ name, rows string }{
		{"not base64", `"!!"`},
		{"cut short", `"AMAAAgrGM2QHBrsD3As="`},
		{"bad flags", `"/w=="`},
		{"port out of range", `"AMAAAgrGM2QHBoCABA=="`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs TrafficRows
			if err := json.Unmarshal([]byte(tc.rows), &rs); err == nil {
				t.Fatalf("accepted: %+v", rs)
			}
			if err := EachTrafficRow([]byte(`{"rows":`+tc.rows+`}`), func(*TrafficRowAddrs) error { return nil }); err == nil {
				t.Fatal("walk accepted it")
			}
		})
	}
	if _, err := (TrafficRows{{Src: "x", Dst: "1.1.1.1"}}).MarshalJSON(); err == nil {
		t.Fatal("a row with a bad address was written")
	}
}

// A TrafficPacker writes, from rows packed one at a time, the payload
// New writes for the same rows listed, in one buffer made at its final
// size when told the rows' packed size; it refuses rows given both ways,
// an address it cannot pack, and rows after its payload was made.
func TestTrafficPacker(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)
	rows := []TrafficRow{
		{Src: "192.0.2.10", Dst: "198.51.100.7", Proto: 6, Port: 443, Bytes: 1500, Packets: 10, Flows: 2},
		{Src: "2001:db8::1", Dst: "::ffff:198.51.100.7", Proto: 58, Bytes: 1 << 40, Packets: 1, Flows: 1},
		{Src: "10.0.0.1", Dst: "2001:db8::2", Proto: 17, Port: 53, Bytes: 0, Packets: 0, Flows: 1},
		{Src: "2001:db8::3", Dst: "2001:db8::4", Proto: 6, Port: 65535, Bytes: math.MaxUint64, Packets: math.MaxUint64, Flows: math.MaxUint64},
	}
	// Enough rows to span several of the packer's chunks, of every
	// length modulo 3 (base64 groups).
	for i := range 3000 {
		rows = append(rows, TrafficRow{
			Src: fmt.Sprintf("10.1.%d.%d", i>>8, i&255), Dst: fmt.Sprintf("2001:db8::%x", i),
			Proto: byte(i), Port: uint16(i * 31), Bytes: uint64(i) << (i % 57), Packets: uint64(i * i), Flows: uint64(i % 300),
		})
	}
	head := TrafficRecorded{
		ScanID: "flowlistener:gw@1", Started: at.Add(-time.Minute), Finished: at, Complete: true, Listen: "[::]:2055",
		Datagrams: 3, Flows: 5, Drops: map[string]uint64{"rows": 1},
		Exporters: []TrafficExporter{{Addr: "192.0.2.1", Versions: []int{9}, Domains: 1, Templates: 2, Datagrams: 3, Flows: 5, Sampling: 1}},
	}
	for _, n := range []int{0, 1, 2, 3, 4, 200, 201, 202, len(rows)} {
		listed := head
		listed.Rows = append(TrafficRows{}, rows[:n]...)
		want, err := New(KindTrafficRecorded, listed, at)
		if err != nil {
			t.Fatal(err)
		}
		addrs := make([]TrafficRowAddrs, n)
		size := 0
		for i, r := range rows[:n] {
			addrs[i] = TrafficRowAddrs{Src: netip.MustParseAddr(r.Src), Dst: netip.MustParseAddr(r.Dst), Proto: r.Proto, Port: r.Port, Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows}
			packed, err := appendPackedAddrs(nil, &addrs[i])
			if err != nil {
				t.Fatal(err)
			}
			if PackedRowLen(&addrs[i]) != len(packed) {
				t.Fatalf("row %d: PackedRowLen %d, packed %d bytes", i, PackedRowLen(&addrs[i]), len(packed))
			}
			size += len(packed)
		}
		for _, hint := range []int{size, 0} {
			pk, err := NewTrafficPacker(head, hint)
			if err != nil {
				t.Fatal(err)
			}
			for i := range addrs {
				if err := pk.Add(&addrs[i]); err != nil {
					t.Fatal(err)
				}
			}
			got, err := pk.Recorded(at)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Payload) != string(want.Payload) || got.V != want.V || got.Kind != want.Kind || pk.Len() != n || !got.Time.Equal(at) {
				t.Fatalf("%d rows (size %d): packed one at a time\n%.300s\nlisted\n%.300s", n, hint, got.Payload, want.Payload)
			}
			if hint == size && cap(got.Payload) != len(got.Payload) {
				t.Fatalf("%d rows: payload of %d bytes in a buffer of %d: not made at its size", n, len(got.Payload), cap(got.Payload))
			}
			late := TrafficRowAddrs{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2")}
			if err := pk.Add(&late); err == nil {
				t.Fatal("a row was taken after the payload was made")
			}
			if _, err := pk.Recorded(at); err == nil {
				t.Fatal("a second payload was made")
			}
		}
	}
	both := head
	both.Rows = rows[:1]
	if _, err := NewTrafficPacker(both, 0); err == nil {
		t.Fatal("rows both listed and packed were taken")
	}
	pk, err := NewTrafficPacker(head, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []TrafficRowAddrs{
		{Src: netip.MustParseAddr("fe80::1%eth0"), Dst: netip.MustParseAddr("fe80::2")},
		{Dst: netip.MustParseAddr("192.0.2.1")},
	} {
		if err := pk.Add(&bad); err == nil {
			t.Fatalf("%v → %v packed", bad.Src, bad.Dst)
		}
	}
	e, err := pk.Recorded(at)
	if err != nil || pk.Len() != 0 || !strings.Contains(string(e.Payload), `"rows":""}`) {
		t.Fatalf("refused rows left %d rows: %v %s", pk.Len(), err, e.Payload)
	}
}
