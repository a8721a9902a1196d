package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/httpapi/mcp"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/traffic"
)

type activity struct {
	tf traffic.Filter
	df dns.Filter
}

func (a *activity) DeviceTraffic(_ context.Context, id string, f traffic.Filter) (projections.Page[traffic.Item], error) {
	if id != "dev-nas" {
		return projections.Page[traffic.Item]{}, projections.ErrNotFound
	}
	a.tf = f
	return projections.Page[traffic.Item]{Items: []traffic.Item{{Key: "1.1.1.1", Peer: "1.1.1.1", Name: "one.one.one.one", Country: "AU",
		Totals: traffic.Totals{BytesIn: 300, BytesOut: 100}}}}, nil
}

func (a *activity) DeviceLookups(_ context.Context, id string, f dns.Filter) (projections.Page[dns.Item], error) {
	if id != "dev-nas" {
		return projections.Page[dns.Item]{}, projections.ErrNotFound
	}
	a.df = f
	return projections.Page[dns.Item]{Items: []dns.Item{{Hour: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Domain: "example.com", Count: 4, Blocked: 1}}}, nil
}

// With traffic and lookups recorded, device_traffic and device_dns are
// offered and answer with structured items; bad arguments are tool errors.
func TestActivityTools(t *testing.T) {
	inv, act := newInventory(), &activity{}
	h, err := mcp.Handler(mcp.Deps{Inventory: inv, Commander: inv, Traffic: act, DNS: act, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{MCPEnabled: true, MCP: h}, httpapi.Deps{Inventory: inv, Commander: inv, Auth: auth{}, Ready: ready{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs, err := connect(t, srv, tokRead)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "device_traffic", map[string]any{"id": "dev-nas", "by": "peer", "limit": 5})
	var tout mcp.TrafficOut
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &tout) != nil || len(tout.Items) != 1 || tout.Items[0].Name != "one.one.one.one" || act.tf.Limit != 5 ||
		act.tf.Until.Sub(act.tf.Since) != 24*time.Hour {
		t.Fatalf("device_traffic: %s %s filter %+v", text(res), b, act.tf)
	}
	res = call(t, cs, "device_dns", map[string]any{"id": "dev-nas", "q": "example", "since": "2026-03-01T00:00:00Z", "until": "2026-03-02T00:00:00Z"})
	var dout mcp.DNSOut
	b, _ = json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &dout) != nil || len(dout.Items) != 1 || dout.Items[0].Count != 4 || act.df.Q != "example" {
		t.Fatalf("device_dns: %s %s", text(res), b)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"device_traffic", map[string]any{"id": "dev-none"}, "no device"},
		{"device_traffic", map[string]any{"id": "dev-nas", "by": "port"}, "peer, country or hour"},
		{"device_dns", map[string]any{"id": "dev-nas", "since": "2026-01-01T00:00:00Z", "until": "2026-03-01T00:00:00Z"}, "31 days"},
		{"device_dns", map[string]any{"id": "dev-nas", "since": "yesterday"}, "RFC 3339"},
	} {
		if res := call(t, cs, tc.tool, tc.args); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: %s", tc.tool, tc.args, text(res))
		}
	}
}
