package events

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// viaJSON is what EachTrafficRow must hand over: the rows encoding/json
// decodes, those whose addresses parse.
func viaJSON(t *testing.T, payload string) ([]TrafficRowAddrs, error) {
	t.Helper()
	var p TrafficRecorded
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return nil, err
	}
	var out []TrafficRowAddrs
	for _, r := range p.Rows {
		s, e1 := netip.ParseAddr(r.Src)
		d, e2 := netip.ParseAddr(r.Dst)
		if e1 != nil || e2 != nil {
			continue
		}
		out = append(out, TrafficRowAddrs{Src: s, Dst: d, Proto: r.Proto, Port: r.Port, Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows})
	}
	return out, nil
}

func TestEachTrafficRow(t *testing.T) {
	row := `{"s":"10.0.0.5","d":"1.1.1.1","p":17,"port":53,"b":100,"n":2,"f":1}`
	tests := []struct {
		name    string
		payload string
		wantErr bool
	}{
		{"one row", `{"scan_id":"x","rows":[` + row + `]}`, false},
		{"rows first, header after", `{"rows":[` + row + `],"datagrams":3,"drops":{"short":1},"exporters":[{"addr":"192.0.2.1"}]}`, false},
		{"v6 and v4-mapped-looking text", `{"rows":[{"s":"2001:db8::1","d":"::ffff:1.2.3.4","p":6,"b":1,"n":1,"f":1},` + row + `]}`, false},
		{"no port", `{"rows":[{"s":"10.0.0.5","d":"1.1.1.1","p":1,"b":64,"n":1,"f":1}]}`, false},
		{"whitespace", "{ \"rows\" : [ \n" + row + " , " + row + " ] }", false},
		{"empty, null, none", `{"rows":[]}`, false},
		{"null rows", `{"rows":null}`, false},
		{"no rows key", `{"scan_id":"x"}`, false},
		{"bad address skipped", `{"rows":[{"s":"10.0.0.256","d":"1.1.1.1","p":6,"b":1,"n":1,"f":1},{"s":"010.0.0.1","d":"1.1.1.1","p":6,"b":1,"n":1,"f":1},` + row + `]}`, false},
		{"escape in a later row (fallback, no row twice)", `{"rows":[` + row + `,{"s":"10.0.0.\u0036","d":"1.1.1.1","p":6,"b":7,"n":1,"f":1}]}`, false},
		{"unknown key in a row (fallback)", `{"rows":[` + row + `,{"s":"10.0.0.6","d":"1.1.1.1","x":1,"p":6,"b":7,"n":1,"f":1}]}`, false},
		{"large counters", `{"rows":[{"s":"10.0.0.5","d":"1.1.1.1","p":6,"b":18446744073709551615,"n":1,"f":1}]}`, false},
		{"proto out of range", `{"rows":[{"s":"10.0.0.5","d":"1.1.1.1","p":256,"b":1,"n":1,"f":1}]}`, true},
		{"malformed after rows", `{"rows":[` + row + `],"x":}`, true},
		{"not an object", `[1]`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := viaJSON(t, tc.payload)
			var got []TrafficRowAddrs
			err := EachTrafficRow([]byte(tc.payload), func(r *TrafficRowAddrs) error {
				got = append(got, *r)
				return nil
			})
			if (err != nil) != tc.wantErr || (werr != nil) != tc.wantErr {
				t.Fatalf("error %v (encoding/json: %v), want error %v", err, werr, tc.wantErr)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("rows\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestEachTrafficRowStops(t *testing.T) {
	row := `{"s":"10.0.0.5","d":"1.1.1.1","p":17,"port":53,"b":100,"n":2,"f":1}`
	stop := errors.New("stop")
	n := 0
	err := EachTrafficRow([]byte(`{"rows":[`+row+`,`+row+`]}`), func(*TrafficRowAddrs) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("fn's error: %v after %d rows", err, n)
	}
	err = EachTrafficRow([]byte(`{"rows":[`+row+`],"rows":[`+row+`]}`), func(*TrafficRowAddrs) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "rows") {
		t.Fatalf("a repeated rows key: %v", err)
	}
}

// The row walk allocates nothing per IPv4 row.
func TestEachTrafficRowAllocs(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"rows":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"s":"10.0.3.5","d":"198.18.0.7","p":6,"port":443,"b":1500,"n":3,"f":1}`)
	}
	b.WriteString(`]}`)
	payload := []byte(b.String())
	var sum uint64
	allocs := testing.AllocsPerRun(10, func() {
		_ = EachTrafficRow(payload, func(r *TrafficRowAddrs) error { sum += r.Bytes; return nil })
	})
	if allocs > 10 {
		t.Fatalf("%v allocations for 1,000 rows", allocs)
	}
}

// FuzzPackedTrafficRows: the packed rows walk to exactly the rows
// EachTrafficRow walks, whichever path made them, and a payload it
// refuses is refused.
func FuzzPackedTrafficRows(f *testing.F) {
	v2 := MustNew(KindTrafficRecorded, TrafficRecorded{Rows: TrafficRows{
		{Src: "192.0.2.1", Dst: "2001:db8::1", Proto: 6, Port: 443, Bytes: 1, Packets: 1, Flows: 1},
		{Src: "::ffff:10.0.0.1", Dst: "8.8.8.8", Proto: 17, Port: 53, Bytes: 1 << 40, Packets: 2, Flows: 3},
	}}, time.Time{}).Payload
	for _, s := range []string{string(v2), `{"rows":null}`, `{"rows":""}`, `{"rows":"AA=="}`, `{"rows":"!"}`,
		`{"rows":[{"s":"10.0.0.1","d":"10.0.0.2","p":6,"b":1,"n":1,"f":1}]}`, `{"rows":"AQ==","rows":"AQ=="}`, `{"x":"\u0041","rows":"AAAAAAAAAAAAAAAA"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var want []TrafficRowAddrs
		werr := EachTrafficRow(payload, func(r *TrafficRowAddrs) error {
			want = append(want, *r)
			return nil
		})
		packed, err := PackedTrafficRows(payload)
		if (err != nil) != (werr != nil) {
			t.Fatalf("PackedTrafficRows: %v; EachTrafficRow: %v", err, werr)
		}
		if err != nil {
			return
		}
		var got []TrafficRowAddrs
		for rest := packed; len(rest) > 0; {
			var r TrafficRowAddrs
			if rest, err = NextTrafficRow(rest, &r); err != nil {
				t.Fatalf("its own packed rows do not read: %v", err)
			}
			r.Src, r.Dst = r.Src.WithZone(""), r.Dst.WithZone("")
			got = append(got, r)
		}
		for i := range want {
			want[i].Src, want[i].Dst = want[i].Src.WithZone(""), want[i].Dst.WithZone("")
		}
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("packed %+v\nwalked %+v", got, want)
		}
	})
}
