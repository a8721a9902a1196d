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
	"github.com/jocasta/jocasta/projections/history"
)

var histEarliest = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// pastInventory answers the history reads: three devices at any instant
// from histEarliest, a CompactedError before it.
type pastInventory struct{ asked []time.Time }

func (p *pastInventory) check(at time.Time) error {
	p.asked = append(p.asked, at)
	if at.Before(histEarliest) {
		return &history.CompactedError{At: at, Earliest: histEarliest}
	}
	return nil
}

func ptr(s string) *string { return &s }

func (p *pastInventory) devices() []history.Device {
	return []history.Device{
		{ID: "dev-tv", Name: "tv.lab", MAC: ptr("00:11:22:00:00:03"), Presence: "offline"},
		{ID: "dev-nas", Name: "nas.lab", Addresses: []history.Address{{IP: "10.0.0.5"}}, Presence: "online"},
		{ID: "dev-phone", Name: "Phone", Vendor: ptr("Apple"), Presence: "online"},
	}
}

func (p *pastInventory) DeviceAt(_ context.Context, id string, at time.Time) (history.Device, error) {
	if err := p.check(at); err != nil {
		return history.Device{}, err
	}
	for _, d := range p.devices() {
		if d.ID == id {
			return d, nil
		}
	}
	return history.Device{}, projections.ErrNotFound
}

func (p *pastInventory) DevicesAt(_ context.Context, at time.Time) ([]history.Device, error) {
	return p.devices(), p.check(at)
}

func (p *pastInventory) StatsAt(_ context.Context, at time.Time) (history.Stats, error) {
	return history.Stats{At: at, Devices: 3, ByPresence: map[string]int{"online": 2, "offline": 1}}, p.check(at)
}

func (p *pastInventory) Diff(_ context.Context, from, to time.Time) (history.Diff, error) {
	if err := p.check(from); err != nil {
		return history.Diff{}, err
	}
	ds := p.devices()
	return history.Diff{From: from, To: to, Added: ds[:2], Removed: ds[2:],
		Changed: []history.Changed{{ID: "dev-tv", Name: "tv.lab", Fields: map[string]history.FieldChange{"presence": {From: "online", To: "offline"}}}}}, nil
}

// inventory_at and inventory_diff answer the inventory at a past instant
// through a real MCP client; an instant before the kept history is a tool
// error naming the earliest one; without a history reader they are not
// offered.
func TestHistoryTools(t *testing.T) {
	inv, past := newInventory(), &pastInventory{}
	serve := func(d mcp.Deps) *httptest.Server {
		h, err := mcp.Handler(d)
		if err != nil {
			t.Fatal(err)
		}
		api, err := httpapi.New(httpapi.Config{MCPEnabled: true, MCP: h}, httpapi.Deps{Inventory: inv, Commander: inv, Auth: auth{}, Ready: ready{}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		return srv
	}
	cs, err := connect(t, serve(mcp.Deps{Inventory: inv, Commander: inv, History: past, Version: "test"}), tokRead)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "inventory_at", map[string]any{"at": "2026-11-17T02:14:00Z", "limit": 2})
	var out mcp.AtOut
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &out) != nil || out.Total != 3 || len(out.Devices) != 2 ||
		out.Devices[0].Name != "nas.lab" || out.Devices[1].Name != "Phone" || out.Stats == nil || out.Stats.Devices != 3 ||
		!out.At.Equal(time.Date(2026, 11, 17, 2, 14, 0, 0, time.UTC)) {
		t.Fatalf("inventory_at: %s %s", text(res), b)
	}
	res = call(t, cs, "inventory_at", map[string]any{"at": "2026-11-17T02:14:00+01:00", "q": "APPLE"})
	b, _ = json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &out) != nil || out.Total != 1 || out.Devices[0].ID != "dev-phone" ||
		!past.asked[len(past.asked)-1].Equal(time.Date(2026, 11, 17, 1, 14, 0, 0, time.UTC)) {
		t.Fatalf("inventory_at q: %s %s", text(res), b)
	}
	res = call(t, cs, "inventory_at", map[string]any{"at": "2026-11-17T02:14:00Z", "id": "dev-tv"})
	out = mcp.AtOut{}
	b, _ = json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &out) != nil || out.Total != 1 || out.Devices[0].Presence != "offline" || out.Stats != nil {
		t.Fatalf("inventory_at id: %s %s", text(res), b)
	}
	res = call(t, cs, "inventory_diff", map[string]any{"from": "2026-11-13T00:00:00Z", "to": "2026-11-20T00:00:00Z", "limit": 1})
	var dout mcp.DiffOut
	b, _ = json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &dout) != nil || len(dout.Added) != 1 || dout.AddedTotal != 2 || dout.RemovedTotal != 1 ||
		dout.ChangedTotal != 1 || dout.Changed[0].Fields["presence"].To != "offline" {
		t.Fatalf("inventory_diff: %s %s", text(res), b)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"inventory_at", map[string]any{"at": "2026-10-01T00:00:00Z"}, "the earliest instant that can be shown is 2026-11-01T00:00:00Z"},
		{"inventory_at", map[string]any{}, `missing properties: ["at"]`},
		{"inventory_at", map[string]any{"at": "last tuesday"}, "RFC 3339"},
		{"inventory_at", map[string]any{"at": "2026-11-17T00:00:00Z", "id": "dev-none"}, "no device"},
		{"inventory_at", map[string]any{"at": "2026-11-17T00:00:00Z", "limit": 500}, "limit"},
		{"inventory_diff", map[string]any{"from": "2026-11-20T00:00:00Z", "to": "2026-11-13T00:00:00Z"}, "before"},
		{"inventory_diff", map[string]any{"from": "2026-10-20T00:00:00Z", "to": "2026-11-13T00:00:00Z"}, "earliest"},
		{"inventory_at", map[string]any{"at": "2099-01-01T00:00:00Z"}, "in the future"},
		{"inventory_diff", map[string]any{"from": "2026-11-13T00:00:00Z", "to": "2099-01-01T00:00:00Z"}, "in the future"},
	} {
		if res := call(t, cs, tc.tool, tc.args); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: %s", tc.tool, tc.args, text(res))
		}
	}

	// Without a history reader the tools are not offered.
	cs2, err := connect(t, serve(mcp.Deps{Inventory: inv, Commander: inv, Version: "test"}), tokRead)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs2.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.HasPrefix(tl.Name, "inventory_at") || tl.Name == "inventory_diff" {
			t.Errorf("%s offered without history", tl.Name)
		}
	}
}
