package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/traffic"
)

// fakeTraffic answers the traffic endpoints for the fake inventory's
// devices, recording the filter it got.
type fakeTraffic struct {
	inv    *fakeInventory
	filter traffic.Filter
	since  time.Time
	until  time.Time
	limit  int
}

func (f *fakeTraffic) DeviceTraffic(ctx context.Context, id string, fl traffic.Filter) (projections.Page[traffic.Item], error) {
	if _, err := f.inv.Device(ctx, id); err != nil {
		return projections.Page[traffic.Item]{}, err
	}
	f.filter = fl
	if fl.Cursor != "" && fl.Cursor != "next" {
		return projections.Page[traffic.Item]{}, projections.ErrBadCursor
	}
	h := fl.Since
	items := []traffic.Item{
		{Key: "1.1.1.1", Peer: "1.1.1.1", Country: "AU", Totals: traffic.Totals{BytesIn: 300, BytesOut: 100, PacketsIn: 2, PacketsOut: 2, FlowsIn: 1, FlowsOut: 1}},
		{Key: h.Format(time.RFC3339), Hour: &h},
	}
	next := "next"
	return projections.Page[traffic.Item]{Items: items, NextCursor: &next}, nil
}

func (f *fakeTraffic) Overview(_ context.Context, since, until time.Time, limit int) (traffic.Overview, error) {
	f.inv.mu.Lock()
	err := f.inv.check()
	f.inv.mu.Unlock()
	if err != nil {
		return traffic.Overview{}, err
	}
	f.since, f.until, f.limit = since, until, limit
	return traffic.Overview{Since: since, Until: until, Home: "DE",
		Devices:   []traffic.DeviceTotal{{DeviceID: "dev-nas", Totals: traffic.Totals{BytesOut: 5}}},
		Countries: []traffic.CountryTotal{{Country: "AU", Totals: traffic.Totals{BytesOut: 5}}},
		Peers:     []traffic.PeerTotal{{Peer: "1.1.1.1", Country: "AU", Totals: traffic.Totals{BytesOut: 5}}},
	}, nil
}

func TestDeviceTraffic(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	now := e.clock.Now()
	tests := []struct {
		name, target string
		since, until time.Time
		by           string
		limit        int
	}{
		{"defaults: the last day by peer", "/api/devices/dev-nas/traffic", now.Add(-24 * time.Hour), now, "", 100},
		{"range, by hour, paging", "/api/devices/dev-nas/traffic?since=2026-03-01T00:00:00Z&until=2026-03-02T00:00:00Z&by=hour&limit=5&cursor=next&q=cdn",
			time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), "hour", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("GET", tc.target, "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			f := e.traffic.filter
			if !f.Since.Equal(tc.since) || !f.Until.Equal(tc.until) || f.By != tc.by || f.Limit != tc.limit {
				t.Fatalf("filter %+v", f)
			}
			var page struct {
				Items      []map[string]any `json:"items"`
				NextCursor *string          `json:"next_cursor"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 2 || page.Items[0]["bytes_in"] != 300.0 || page.Items[0]["country"] != "AU" || page.NextCursor == nil {
				t.Fatalf("body %s", body)
			}
		})
	}
	for _, tc := range []struct{ target, param string }{
		{"/api/devices/dev-nas/traffic?by=port", "by"},
		{"/api/devices/dev-nas/traffic?since=2020-01-01T00:00:00Z", "since"},
		{"/api/devices/dev-nas/traffic?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", "until"},
		{"/api/devices/dev-nas/traffic?cursor=forged", "cursor"},
		{"/api/traffic?limit=0", "limit"},
		{"/api/traffic?since=2027-01-01T00:00:00Z", "since"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			resp, body := e.do("GET", tc.target, "", bearer(tokRead))
			p := wantProblem(t, resp, body, 400, "invalid-query")
			if len(p.Errors) != 1 || p.Errors[0].Parameter != tc.param {
				t.Fatalf("problem %+v", p)
			}
		})
	}
	t.Run("unknown device", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices/dev-none/traffic", "", bearer(tokRead))
		wantProblem(t, resp, body, 404, "device-not-found")
	})
}

func TestTrafficOverview(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", "/api/traffic?since=2026-03-01T00:00:00Z&limit=3", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	if !e.traffic.since.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || !e.traffic.until.Equal(e.clock.Now()) || e.traffic.limit != 3 {
		t.Fatalf("asked %v %v %d", e.traffic.since, e.traffic.until, e.traffic.limit)
	}
	var ov traffic.Overview
	if err := json.Unmarshal(body, &ov); err != nil || ov.Home != "DE" || len(ov.Peers) != 1 {
		t.Fatalf("body %s (%v)", body, err)
	}
	resp, body = e.do("GET", "/api/traffic", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	if e.traffic.limit != 10 || !e.traffic.since.Equal(e.clock.Now().Add(-24*time.Hour)) {
		t.Fatalf("defaults: %d %v", e.traffic.limit, e.traffic.since)
	}
}

// Without a flow listener both endpoints say what to enable.
func TestTrafficNotRecorded(t *testing.T) {
	inv := newFakeInventory()
	e := &env{t: t, inv: inv, cmd: &fakeCommander{inv: inv}, auth: &fakeAuth{}, ready: &fakeReady{ready: true},
		clock: &fakeClock{t: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}, logs: &syncBuffer{}}
	h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{Inventory: e.inv, Commander: e.cmd, Auth: e.auth, Ready: e.ready, Log: zerolog.New(e.logs), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	for _, target := range []string{"/api/devices/dev-nas/traffic?since=2026-03-01T00:00:00Z&q=cdn", "/api/traffic"} {
		resp, body := e.do("GET", target, "", bearer(tokRead))
		p := wantProblem(t, resp, body, 404, "not-recorded")
		if p.Detail != "no traffic is recorded: enable a flowlistener plugin" {
			t.Fatalf("%s: detail %q", target, p.Detail)
		}
	}
	resp, body := e.do("GET", "/api/devices/dev-none/traffic", "", bearer(tokRead))
	wantProblem(t, resp, body, 404, "device-not-found")
}
