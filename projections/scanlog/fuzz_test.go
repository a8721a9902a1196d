package scanlog

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// FuzzApply feeds hostile payloads of every run kind and hostile cursors:
// an apply either writes an entry whose JSON lists back or fails; a
// listing never fails but with ErrBadCursor; nothing panics.
func FuzzApply(f *testing.F) {
	f.Add(events.KindSweepCompleted, []byte(`{"scan_id":"s","networks":["10.0.0.1/24"],"same":[0,1,2,3],"hosts":[{"ip":"10.0.0.1"}]}`), "")
	f.Add(events.KindPortScanCompleted, []byte(`{"results":[{"ip":"1.2.3.4","open":[22]}]}`), "AAAA")
	f.Add(events.KindTrafficRecorded, []byte(`{"drops":{"x":1},"lost_flows":18446744073709551615,"flows":18446744073709551615}`), "")
	f.Add(events.KindDNSRead, []byte(`{"rows":[{"c":"a"},{"c":"a"}],"entries":-5}`), "")
	f.Add(events.KindRetentionPurged, []byte(`{"history_before":"2026-01-01T00:00:00Z"}`), "")
	f.Add(events.KindScanFailed, []byte(`{"finished":"0001-01-01T00:00:00Z","reason":"\u0000"}`), "")
	h := newHarness(f) // one database for every input: entries pile up
	f.Fuzz(func(t *testing.T, kind string, payload []byte, cursor string) {
		ev := h.envelope(events.KindScanFailed, events.ScanFailed{}, t0, "fuzz")
		ev.Kind, ev.Payload = kind, json.RawMessage(payload)
		_ = h.apply(ev)
		ctx := context.Background()
		if _, err := h.log.ListScans(ctx, projections.ScanFilter{Cursor: cursor, Limit: 3}); err != nil && !errors.Is(err, projections.ErrBadCursor) {
			t.Fatalf("list: %v", err)
		}
		if _, err := h.log.RowsBefore(ctx, time.Now()); err != nil {
			t.Fatalf("rows before: %v", err)
		}
	})
}

// FuzzRow: an entry reads back exactly as written, and a body that is not
// one is refused, never a panic.
func FuzzRow(f *testing.F) {
	f.Add("s1", "sweep:lab", "devices", int64(10), "10.0.0.0/24", 254, 3, 0, true, "send: no buffer", []byte{1, 0})
	f.Add("", "", "", int64(-1), "", -5, 0, 1<<30, false, "", []byte{})
	f.Fuzz(func(t *testing.T, id, src, kind string, dur int64, network string, probes, hosts, rows int, complete bool, errText string, junk []byte) {
		at := time.Unix(1_700_000_000, 5).UTC()
		s := projections.Scan{ID: id, Source: src, Kind: kind, Started: at, Finished: at.Add(time.Second), DurationMS: dur,
			Networks: []string{network}, ProbesSent: probes, HostsFound: hosts, Rows: rows, Complete: complete, Errors: []string{errText, ""}}
		k, row, err := encodeRow(7, &s)
		if err != nil {
			t.Fatal(err)
		}
		started, _, body, ok := splitRow(row)
		if !ok {
			t.Fatal("split")
		}
		got, err := decodeBody(k, started, body)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip: %+v %v, want %+v", got, err, s)
		}
		_, _ = decodeBody(k, started, junk)
		if _, err := decodeBody(k, started, append(body, 0)); err == nil {
			t.Error("trailing bytes accepted")
		}
	})
}

// FuzzSweepHead: what scanSweepHead reads, encoding/json reads the same
// (it may refuse what encoding/json takes: the caller then uses that),
// hosts aside, which it counts without decoding.
func FuzzSweepHead(f *testing.F) {
	f.Add([]byte(`{"scan_id":"s","started":"2026-11-20T10:00:00Z","finished":"2026-11-20T10:00:01.5+01:00","networks":["10.0.0.0/24"],"probes_sent":254,"complete":true,"errors":["x"],"base":3,"same":[0,500,2,7],"hosts":[{"ip":"10.0.0.1","names":{"dns":"a"}},null]}`))
	f.Add([]byte(`{"hosts":null,"networks":[],"same":null}`))
	f.Add([]byte(`{"scan_id":"a\u00e9","hosts":[1]}`))
	f.Add([]byte(` { "complete" : false , "hosts" : [ ] } `))
	f.Fuzz(func(t *testing.T, p []byte) {
		var h sweepHead
		if !scanSweepHead(p, &h) {
			return
		}
		// The hosts' contents are not checked here (the inventory, which
		// reads them, refuses a sweep whose hosts do not decode), so
		// compare with the hosts as raw values.
		var whole struct {
			events.SweepCompleted
			Hosts []json.RawMessage `json:"hosts"`
		}
		if err := json.Unmarshal(p, &whole); err != nil {
			t.Fatalf("scanSweepHead read %q, encoding/json refuses it: %v", p, err)
		}
		want := sweepHead{ScanID: whole.ScanID, Started: whole.Started, Finished: whole.Finished, Networks: whole.Networks,
			ProbesSent: whole.ProbesSent, Complete: whole.Complete, Errors: whole.Errors, Base: whole.Base, Same: whole.Same,
			Hosts: len(whole.Hosts)}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", p, h, want)
		}
	})
}
