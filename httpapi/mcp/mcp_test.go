package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/httpapi/mcp"
	"github.com/jocasta/jocasta/projections"
)

const (
	tokRead  = "jct_R3adR3adR3adR3adR3adR3adR3adR3adR3adR3adR3a"
	tokWrite = "jct_Wr1teWr1teWr1teWr1teWr1teWr1teWr1teWr1teWr1"
)

type auth struct{}

func (auth) Authenticate(_ context.Context, secret string) (projections.Principal, error) {
	switch secret {
	case tokRead:
		return projections.Principal{TokenID: "tok_r", Name: "reader", Mode: events.ModeRead}, nil
	case tokWrite:
		return projections.Principal{TokenID: "tok_w", Name: "writer", Mode: events.ModeReadWrite}, nil
	}
	return projections.Principal{}, projections.ErrInvalidToken
}

type ready struct{}

func (ready) Ready() bool { return true }

// inventory holds one device; edits record their actor.
type inventory struct {
	mu     sync.Mutex
	dev    projections.Device
	actors []string
}

func newInventory() *inventory {
	mac := "00:00:5e:00:53:01"
	return &inventory{dev: projections.Device{ID: "dev-nas", Name: "nas", Presence: "online", MAC: &mac,
		Names: map[string]projections.Name{}, Addresses: []projections.Address{{IP: "192.0.2.10", Network: "192.0.2.0/24"}},
		Ports: []projections.Port{{Port: 22, Proto: "tcp", Service: "ssh"}}, Sources: []string{"sweep:lan"},
		FirstSeen: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), LastSeen: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}}
}

func (i *inventory) ListDevices(_ context.Context, f projections.DeviceFilter) (projections.Page[projections.Device], error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if f.Q != "" && !strings.Contains(i.dev.Name, f.Q) {
		return projections.Page[projections.Device]{Items: []projections.Device{}}, nil
	}
	return projections.Page[projections.Device]{Items: []projections.Device{i.dev}}, nil
}

func (i *inventory) Device(_ context.Context, id string) (projections.Device, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if id != i.dev.ID {
		return projections.Device{}, projections.ErrNotFound
	}
	return i.dev, nil
}

func (i *inventory) Groups(context.Context) ([]projections.Group, error) { return nil, nil }
func (i *inventory) Stats(context.Context) (projections.Stats, error) {
	return projections.Stats{Devices: 1, ByPresence: map[string]int{"online": 1}, ByGroup: map[string]int{}, ByNetwork: map[string]int{}, BySource: map[string]int{}}, nil
}
func (i *inventory) ListEvents(context.Context, projections.EventFilter) (projections.Page[projections.ChangeEntry], error) {
	return projections.Page[projections.ChangeEntry]{Items: []projections.ChangeEntry{{ID: "e-0", Seq: 1, Kind: "device.discovered", DeviceID: "dev-nas", Summary: "new device nas"}}}, nil
}
func (i *inventory) ListScans(context.Context, projections.ScanFilter) (projections.Page[projections.Scan], error) {
	return projections.Page[projections.Scan]{Items: []projections.Scan{}}, nil
}

func (i *inventory) EditDevice(_ context.Context, actor, id string, e command.DeviceEdit) (projections.Device, error) {
	if errs := e.Validate(); len(errs) > 0 {
		return projections.Device{}, &command.Invalid{Fields: errs}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.actors = append(i.actors, actor)
	if e.Label != nil {
		i.dev.Label = e.Label
	}
	return i.dev, nil
}

func (i *inventory) SetWatch(_ context.Context, actor, id string, w bool) (projections.WatchState, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.actors = append(i.actors, actor)
	i.dev.Watched = w
	return projections.WatchState{Watched: w, Presence: i.dev.Presence}, nil
}

// server is the API with MCP mounted, over real HTTP.
func server(t *testing.T) (*httptest.Server, *inventory) {
	inv := newInventory()
	h, err := mcp.Handler(mcp.Deps{Inventory: inv, Commander: inv, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{MCPEnabled: true, MCP: h},
		httpapi.Deps{Inventory: inv, Commander: inv, Auth: auth{}, Ready: ready{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv, inv
}

type bearer struct {
	tok string
	rt  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return b.rt.RoundTrip(r)
}

func connect(t *testing.T, srv *httptest.Server, tok string) (*sdk.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}}
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestUnauthorized(t *testing.T) {
	srv, _ := server(t)
	for _, tok := range []string{"", "jct_wrong"} {
		if _, err := connect(t, srv, tok); err == nil {
			t.Errorf("token %q: connected, want 401", tok)
		}
		resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	}
}

func TestTools(t *testing.T) {
	srv, inv := server(t)
	cs, err := connect(t, srv, tokRead)
	if err != nil {
		t.Fatal(err)
	}
	// A read token's session is not offered the write tools.
	if names := listTools(t, cs); names != "change_log,get_device,inventory_stats,list_scans,search_devices" {
		t.Errorf("tools listed to a read token %v", names)
	}

	res := call(t, cs, "search_devices", map[string]any{"q": "nas"})
	if res.IsError {
		t.Fatalf("search: %s", text(res))
	}
	var out mcp.SearchOut
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || len(out.Devices) != 1 || out.Devices[0].IPs[0] != "192.0.2.10" || out.Devices[0].OpenPorts != 1 {
		t.Fatalf("structured output %s (%v)", b, err)
	}
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"get_device", map[string]any{"id": "dev-nas"}},
		{"change_log", map[string]any{"device": "dev-nas", "limit": 5}},
		{"list_scans", map[string]any{}},
		{"inventory_stats", map[string]any{}},
	} {
		if res := call(t, cs, tc.tool, tc.args); res.IsError || res.StructuredContent == nil {
			t.Errorf("%s: %s", tc.tool, text(res))
		}
	}

	bad := []struct {
		tool string
		args any
		want string
	}{
		{"search_devices", map[string]any{"limit": 1000}, "limit"},
		{"search_devices", map[string]any{"presence": "gone"}, "presence"},
		{"search_devices", map[string]any{"network": "nope"}, "CIDR"},
		{"search_devices", map[string]any{"limit": "ten"}, ""},
		{"get_device", map[string]any{"id": "dev-none"}, "no device"},
		{"change_log", map[string]any{"since": "yesterday"}, "RFC 3339"},
		{"change_log", map[string]any{"kinds": []string{"device.exploded"}}, "not a change-log kind"},
		{"change_log", map[string]any{"device": "dev-none"}, "no device"},
		{"edit_device", map[string]any{"id": "dev-nas", "label": "x"}, "mode read"},
		{"watch_device", map[string]any{"id": "dev-nas", "watched": true}, "mode read"},
	}
	for _, tc := range bad {
		res := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: isError %v, %q; want an error saying %q", tc.tool, tc.args, res.IsError, text(res), tc.want)
		}
	}
	if len(inv.actors) != 0 {
		t.Errorf("a read token wrote: %v", inv.actors)
	}
}

func TestWriteTools(t *testing.T) {
	srv, inv := server(t)
	cs, err := connect(t, srv, tokWrite)
	if err != nil {
		t.Fatal(err)
	}
	if names := listTools(t, cs); names != "change_log,edit_device,get_device,inventory_stats,list_scans,search_devices,watch_device" {
		t.Errorf("tools listed to a read_write token %v", names)
	}
	res := call(t, cs, "edit_device", map[string]any{"id": "dev-nas", "label": "Storage"})
	if res.IsError {
		t.Fatalf("edit: %s", text(res))
	}
	var d projections.Device
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &d); err != nil || d.Label == nil || *d.Label != "Storage" {
		t.Fatalf("edit answered %s", b)
	}
	if res := call(t, cs, "watch_device", map[string]any{"id": "dev-nas", "watched": true}); res.IsError {
		t.Fatalf("watch: %s", text(res))
	}
	if res := call(t, cs, "edit_device", map[string]any{"id": "dev-nas", "label": strings.Repeat("x", 200)}); !res.IsError || !strings.Contains(text(res), "128") {
		t.Errorf("long label: %s", text(res))
	}
	if res := call(t, cs, "edit_device", map[string]any{"id": "dev-nas", "label": "a", "clear": []string{"label"}}); !res.IsError || !strings.Contains(text(res), "both given and in clear") {
		t.Errorf("a label both set and cleared: %s", text(res))
	}
	if res := call(t, cs, "edit_device", map[string]any{"id": "dev-nas"}); !res.IsError {
		t.Error("an edit of nothing: want an error")
	}
	want := httpapi.TokenActor(projections.Principal{TokenID: "tok_w", Name: "writer", Mode: events.ModeReadWrite})
	if len(inv.actors) != 2 || inv.actors[0] != want || inv.actors[1] != want {
		t.Errorf("actors %v, want %q twice", inv.actors, want)
	}
}

// listTools lists the session's tools, checks each one's annotations
// and description, and returns their names joined by commas.
func listTools(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		// Hints for a client: reads are read-only and idempotent; the
		// writes set values (idempotent, not destructive).
		write := tl.Name == "edit_device" || tl.Name == "watch_device"
		if a := tl.Annotations; a == nil || !a.IdempotentHint || a.ReadOnlyHint == write || (write && (a.DestructiveHint == nil || *a.DestructiveHint)) {
			t.Errorf("tool %s: annotations %+v", tl.Name, a)
		}
		if len(tl.Description) < 60 {
			t.Errorf("tool %s: description %q says too little for a model", tl.Name, tl.Description)
		}
	}
	return strings.Join(names, ",")
}

var _ = errors.New

// TestRefusalsAreProblems: the MCP transport's own refusals reach the
// client as problem documents, like every other error of the server.
func TestRefusalsAreProblems(t *testing.T) {
	srv, _ := server(t)
	cs, err := connect(t, srv, tokRead)
	if err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	both := "application/json, text/event-stream"
	for _, tc := range []struct {
		name, method, tok, session, ctype, accept, body string
		status                                          int
		slug, detail                                    string
	}{
		{"a session of another token", "POST", tokWrite, cs.ID(), "application/json", both, list, 403, "mcp-session-refused", "another API token"},
		{"an unknown session", "POST", tokRead, "no-such-session", "application/json", both, list, 404, "mcp-session-refused", "initialize a new session"},
		{"no Accept", "POST", tokRead, "", "application/json", "", init, 400, "mcp-invalid-request", "text/event-stream"},
		{"a text body", "POST", tokRead, "", "text/plain", both, init, 415, "unsupported-media-type", "application/json"},
		{"PUT", "PUT", tokRead, "", "application/json", both, init, 405, "method-not-allowed", "POST"},
		{"malformed JSON", "POST", tokRead, "", "application/json", both, "{", 400, "mcp-invalid-request", "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+tc.tok)
			req.Header.Set("Content-Type", tc.ctype)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.session != "" {
				req.Header.Set("Mcp-Session-Id", tc.session)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var p struct {
				Type, Title, Detail, Instance string
				Status                        int
			}
			ct := resp.Header.Get("Content-Type")
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || ct != "application/problem+json" {
				t.Fatalf("status %d, %s: not a problem document (%v)", resp.StatusCode, ct, err)
			}
			if resp.StatusCode != tc.status || p.Status != tc.status || p.Type != "urn:jocasta:problem:"+tc.slug ||
				p.Title == "" || p.Instance != "/mcp" || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("status %d, problem %+v; want %d %s with a detail saying %q", resp.StatusCode, p, tc.status, tc.slug, tc.detail)
			}
		})
	}
	// The session refused to the other token still works for its own.
	if res := call(t, cs, "inventory_stats", map[string]any{}); res.IsError {
		t.Errorf("the session after the refusals: %s", text(res))
	}
}
