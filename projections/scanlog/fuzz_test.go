package scanlog

import (
	"context"
	"encoding/json"
	"errors"
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
