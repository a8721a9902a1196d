package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in   string
		want []portRange
		ok   bool
	}{
		{"", nil, true},
		{"22", []portRange{{22, 22}}, true},
		{"22, 80,8000-8100", []portRange{{22, 22}, {80, 80}, {8000, 8100}}, true},
		{"1-65535", []portRange{{1, 65535}}, true},
		{"0", nil, false},
		{"65536", nil, false},
		{"80-22", nil, false},
		{"22,", nil, false},
		{"a-b", nil, false},
		{"-5", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parsePorts(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, errBadPorts) {
				t.Errorf("error does not wrap errBadPorts: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"", "22", "22,80,8000-8100", "1-65535", "0", "80-22", " 1 - 2 ,3", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := parsePorts(s)
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.lo == 0 || r.hi < r.lo {
				t.Fatalf("%q parsed into bad range %v", s, r)
			}
		}
	})
}

func FuzzCursor(f *testing.F) {
	h := fleet(f, 20)
	p, _ := h.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: 3, Sort: "-last_seen"})
	f.Add(*p.NextCursor, "-last_seen")
	f.Add(encodeCursor(devCursor{S: "ip", K: "10.0.0.3", I: "d"}), "ip")
	f.Add(encodeCursor(logCursor{K: changeKey(3, 0)}), "")
	f.Add("", "name")
	f.Add("e30", "first_seen")
	f.Fuzz(func(t *testing.T, cursor, sort string) {
		ctx := context.Background()
		_, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Cursor: cursor, Sort: sort, Limit: 4})
		if err != nil && !errors.Is(err, projections.ErrBadCursor) && !errors.Is(err, ErrBadFilter) {
			t.Fatalf("devices: %v", err)
		}
		if _, err := h.inv.ListEvents(ctx, projections.EventFilter{Cursor: cursor, Limit: 4}); err != nil && !errors.Is(err, projections.ErrBadCursor) {
			t.Fatalf("events: %v", err)
		}
		if _, err := h.scans.ListScans(ctx, projections.ScanFilter{Cursor: cursor, Limit: 4}); err != nil && !errors.Is(err, projections.ErrBadCursor) {
			t.Fatalf("scans: %v", err)
		}
	})
}

// FuzzApply feeds arbitrary payloads of every kind the projection reads:
// Apply must never panic, and what it commits must reload to the same
// answers.
func FuzzApply(f *testing.F) {
	seed := func(kind string, v any) {
		b, _ := json.Marshal(v)
		f.Add(kind, string(b))
	}
	seed(events.KindSweepCompleted, sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab"), host("10.0.0.6", "")))
	seed(events.KindSweepCompleted, sweepAt(t0, host("::ffff:10.0.0.5", "00:00:00:00:00:00"), host("fe80::1", "zz")))
	seed(events.KindPortScanCompleted, events.PortScanCompleted{Ports: "1-100", Complete: true, Results: []events.PortResult{{IP: "10.0.0.5", Open: []uint16{0, 22}}}})
	seed(events.KindClockTicked, events.ClockTicked{At: t0.Add(-1e18)})
	seed(events.KindRetentionPurged, events.RetentionPurged{HistoryBefore: &t0, DevicesBefore: &t0, DeletedDevices: []string{"x"}})
	seed(events.KindDeviceEdited, events.DeviceEdited{Label: ptr(strings.Repeat("é", 200)), Cleared: []string{"label", "bogus"}})
	f.Add(events.KindSweepCompleted, `{"hosts":[{"ip":"10.0.0.1","names":{"":"x"}}],"finished":"0001-01-01T00:00:00Z"}`)
	f.Add(events.KindSweepCompleted, `{"hosts":null,"networks":["x/99"],"complete":true}`)
	f.Add(events.KindDeviceWatchSet, `{"watched":"yes"}`)
	f.Fuzz(func(t *testing.T, kind, payload string) {
		if !json.Valid([]byte(payload)) {
			return // the store refuses such events
		}
		h := newHarness(t, Options{})
		h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab")))
		id := h.devices(1)[0].ID
		h.seq++
		ev := events.Envelope{Seq: h.seq, ID: fmt.Sprintf("%032x", h.seq), Time: t0.Add(1), Kind: kind, V: 1,
			Source: "fuzz", Device: id, Payload: json.RawMessage(payload)}
		err := h.db.Update(func(tx *bolt.Tx) error {
			if err := h.inv.Apply(tx, ev); err != nil {
				return err
			}
			return h.inv.Flush(tx)
		})
		if err != nil {
			// A failed batch rolls back; the runner then reloads.
			err := h.db.View(h.inv.Load)
			if err != nil {
				t.Fatalf("reload after failed apply: %v", err)
			}
		}
		h.checkReload()
	})
}

func FuzzNormalizeMAC(f *testing.F) {
	for _, s := range []string{"00:11:22:33:44:55", "00-11-22-33-44-55", "AA:BB:CC:DD:EE:FF", "00:00:00:00:00:00", "0011.2233.4455", "zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeMAC(s)
		hw, err := net.ParseMAC(s)
		want := ""
		if err == nil && strings.Trim(hw.String(), "0:") != "" {
			want = strings.ToLower(hw.String())
		}
		if got != want {
			t.Fatalf("normalizeMAC(%q) = %q, want %q", s, got, want)
		}
	})
}
