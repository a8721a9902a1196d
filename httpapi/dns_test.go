package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
)

// fakeDNS answers GET /api/devices/{id}/dns for the fake inventory's
// devices, recording the filter it got.
type fakeDNS struct {
	inv    *fakeInventory
	filter dns.Filter
}

func (f *fakeDNS) DeviceLookups(ctx context.Context, id string, fl dns.Filter) (projections.Page[dns.Item], error) {
	if _, err := f.inv.Device(ctx, id); err != nil {
		return projections.Page[dns.Item]{}, err
	}
	f.filter = fl
	if fl.Cursor != "" && fl.Cursor != "next" {
		return projections.Page[dns.Item]{}, projections.ErrBadCursor
	}
	h := fl.Until.Truncate(time.Hour).Add(-time.Hour)
	items := []dns.Item{
		{Hour: h, Domain: "ads.example.net", Count: 3, Blocked: 3},
		{Hour: h, Domain: "example.com", Count: 2, Answers: []string{"93.184.215.14"}},
	}
	next := "next"
	return projections.Page[dns.Item]{Items: items, NextCursor: &next}, nil
}

func (f *fakeDNS) DeviceHours(ctx context.Context, id string, fl dns.HourFilter) (projections.Page[dns.HourTotal], error) {
	page, err := f.DeviceLookups(ctx, id, dns.Filter{Since: fl.Since, Until: fl.Until})
	return projections.Page[dns.HourTotal]{Items: hourTotals(page.Items, fl.Top)}, err
}

func newDNSEnv(t *testing.T) (*env, *fakeDNS) {
	inv := newFakeInventory()
	e := &env{t: t, inv: inv, cmd: &fakeCommander{inv: inv}, auth: &fakeAuth{}, ready: &fakeReady{ready: true},
		clock: &fakeClock{t: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}, logs: &syncBuffer{}}
	d := &fakeDNS{inv: inv}
	h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{Inventory: e.inv, Commander: e.cmd, Auth: e.auth, Ready: e.ready,
		Log: zerolog.New(e.logs), Now: e.clock.Now, DNS: d})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e, d
}

func TestDeviceDNS(t *testing.T) {
	e, d := newDNSEnv(t)
	now := e.clock.Now()
	for _, tc := range []struct {
		name, target string
		since, until time.Time
		q            string
		limit        int
		cursor       string
	}{
		{"defaults: the last day", "/api/devices/dev-nas/dns", now.Add(-24 * time.Hour), now, "", 100, ""},
		{"range, q, paging", "/api/devices/dev-nas/dns?since=2026-03-01T00:00:00Z&until=2026-03-02T00:00:00Z&q=Example&limit=5&cursor=next",
			time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), "Example", 5, "next"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("GET", tc.target, "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			f := d.filter
			if !f.Since.Equal(tc.since) || !f.Until.Equal(tc.until) || f.Q != tc.q || f.Limit != tc.limit || f.Cursor != tc.cursor {
				t.Fatalf("filter %+v", f)
			}
			var page struct {
				Items      []map[string]any `json:"items"`
				NextCursor *string          `json:"next_cursor"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 2 || page.Items[0]["blocked"] != 3.0 || page.Items[0]["answers"] == nil || page.Items[1]["domain"] != "example.com" || page.NextCursor == nil {
				t.Fatalf("body %s", body)
			}
		})
	}
	for _, tc := range []struct{ target, param string }{
		{"/api/devices/dev-nas/dns?since=2020-01-01T00:00:00Z", "since"},
		{"/api/devices/dev-nas/dns?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", "until"},
		{"/api/devices/dev-nas/dns?until=soon", "until"},
		{"/api/devices/dev-nas/dns?cursor=forged", "cursor"},
		{"/api/devices/dev-nas/dns?limit=0", "limit"},
		{"/api/devices/dev-nas/dns?by=peer", "by"},
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
		resp, body := e.do("GET", "/api/devices/dev-none/dns", "", bearer(tokRead))
		wantProblem(t, resp, body, 404, "device-not-found")
	})
	t.Run("no token", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices/dev-nas/dns", "")
		wantProblem(t, resp, body, 401, "token-missing")
	})
}
