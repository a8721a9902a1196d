package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
)

// Deps are what the tools read and write through.
type Deps struct {
	Inventory httpapi.Inventory
	// Scans is the scan log; nil: the Inventory's, if it has ListScans.
	Scans     httpapi.ScanLog
	Commander httpapi.Commander
	// Traffic and DNS, when set, offer device_traffic and device_dns.
	Traffic Traffic
	DNS     DNS
	// History, when set, offers inventory_at and inventory_diff (the
	// inventory at a past instant; httpapi's at= and /api/diff).
	History httpapi.HistoryReader
	// Version is reported to clients as the server's version.
	Version string
	Log     *slog.Logger
	// Now is the clock past instants are judged by. Default time.Now.
	Now func() time.Time
}

// Handler returns the Streamable HTTP handler of the MCP server. Mount it
// behind httpapi's token authentication (httpapi.Config.MCP).
func Handler(d Deps) (http.Handler, error) {
	e, err := NewEndpoint(d)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Endpoint is the MCP server's HTTP handler with a way to end its
// sessions. Clients that never end theirs (the inspector's CLI sends no
// DELETE) would keep them for the idle timeout; serve closes them all as
// it stops, so that no session outlives the service and no open stream
// holds its shutdown.
type Endpoint struct {
	http.Handler
	// servers are the read_write server and the read one: a read token's
	// session is served by the one without the write tools, so a model
	// is never offered a tool it may not call.
	servers [2]*sdk.Server
}

// Close ends every open session.
func (e *Endpoint) Close() {
	for _, s := range e.servers {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}
}

// NewEndpoint is Handler, with Close.
func NewEndpoint(d Deps) (*Endpoint, error) {
	if d.Inventory == nil || d.Commander == nil {
		return nil, errors.New("mcp: Inventory and Commander are required")
	}
	if d.Scans == nil {
		s, ok := d.Inventory.(httpapi.ScanLog)
		if !ok {
			return nil, errors.New("mcp: Scans is required")
		}
		d.Scans = s
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	t := &tools{d: d}
	rw, ro := t.server(true), t.server(false)
	// getServer runs for a request that opens a session; a request of an
	// open session goes to the session's server (the SDK also checks that
	// it comes with the token that opened it).
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		if p, ok := httpapi.PrincipalFromContext(r.Context()); ok && p.Mode == events.ModeReadWrite {
			return rw
		}
		return ro
	}, &sdk.StreamableHTTPOptions{Logger: d.Log, SessionTimeout: 30 * time.Minute})
	// The router has checked the token; hand its principal to the SDK.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := httpapi.PrincipalFromContext(r.Context())
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.TokenID, Scopes: []string{p.Mode},
			Expiration: time.Now().Add(24 * time.Hour),
			Extra:      map[string]any{"actor": httpapi.TokenActor(p)}}, nil
	}
	return &Endpoint{Handler: auth.RequireBearerToken(verify, nil)(h), servers: [2]*sdk.Server{rw, ro}}, nil
}

// server is the MCP server with every read tool, and with the write
// tools when write is set (for read_write tokens).
func (t *tools) server(write bool) *sdk.Server {
	instr := "jocasta keeps an inventory of the devices on the local networks it sweeps. Use search_devices to find devices, " +
		"get_device for everything about one, change_log for what changed and when, list_scans for the sweeps and port scans, " +
		"inventory_stats for counts. Times are RFC 3339 UTC."
	if write {
		instr += " With this read_write token, edit_device and watch_device change a device."
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "jocasta", Title: "jocasta network device inventory", Version: t.d.Version},
		&sdk.ServerOptions{Instructions: instr})
	t.register(s, write)
	t.registerActivity(s)
	t.registerHistory(s)
	if !write {
		s.AddReceivingMiddleware(refuseWrites)
	}
	return s
}

// writeTools are the tools only a read_write token's session offers.
var writeTools = map[string]bool{"edit_device": true, "watch_device": true}

// refuseWrites answers a call of a write tool in a read token's session
// (where it is not listed) with a tool error that says which token it
// needs, rather than the SDK's "unknown tool".
func refuseWrites(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if ctr, ok := req.(*sdk.CallToolRequest); ok && ctr.Params != nil && writeTools[ctr.Params.Name] {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: errReadOnly.Error()}}}, nil
		}
		return next(ctx, method, req)
	}
}

type tools struct{ d Deps }

func (t *tools) now() time.Time {
	if t.d.Now != nil {
		return t.d.Now()
	}
	return time.Now()
}

// caller is who calls a tool: the token's actor name and whether it may write.
func caller(req *sdk.CallToolRequest) (actor string, write bool) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return "", false
	}
	ti := req.Extra.TokenInfo
	actor, _ = ti.Extra["actor"].(string)
	for _, s := range ti.Scopes {
		if s == events.ModeReadWrite {
			write = true
		}
	}
	return actor, write
}

var errReadOnly = errors.New("this API token has mode read: edit_device and watch_device need a token with mode read_write")

// SearchIn are the arguments of search_devices.
type SearchIn struct {
	Q        string `json:"q,omitempty" jsonschema:"substring of name, label, IP address, MAC address or vendor (case-insensitive)"`
	Group    string `json:"group,omitempty" jsonschema:"only devices in this group (exact)"`
	Presence string `json:"presence,omitempty" jsonschema:"only devices with this presence: online, offline or quiet"`
	Network  string `json:"network,omitempty" jsonschema:"only devices with an address in this CIDR prefix, e.g. 192.168.1.0/24"`
	Watched  *bool  `json:"watched,omitempty" jsonschema:"only watched (true) or unwatched (false) devices"`
	Ignored  *bool  `json:"ignored,omitempty" jsonschema:"only ignored (true) or not ignored (false) devices"`
	Sort     string `json:"sort,omitempty" jsonschema:"order: name, ip, first_seen or last_seen; a leading - is descending. Default name"`
	Limit    int    `json:"limit,omitempty" jsonschema:"most devices returned, 1 to 100 (default 20)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous call, to continue"`
}

// DeviceSummary is one device in search results.
type DeviceSummary struct {
	ID        string    `json:"id"`
	Name      string    `json:"name" jsonschema:"best known name"`
	Label     string    `json:"label,omitempty" jsonschema:"the name a person gave it"`
	Group     string    `json:"group,omitempty"`
	Type      string    `json:"type,omitempty"`
	Presence  string    `json:"presence" jsonschema:"online, offline or quiet (a watched device not seen lately)"`
	Watched   bool      `json:"watched"`
	Ignored   bool      `json:"ignored"`
	MAC       string    `json:"mac,omitempty"`
	Vendor    string    `json:"vendor,omitempty"`
	IPs       []string  `json:"ips" jsonschema:"current addresses (retired ones left out)"`
	OpenPorts int       `json:"open_ports" jsonschema:"number of open TCP ports"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// SearchOut is a page of devices.
type SearchOut struct {
	Devices    []DeviceSummary `json:"devices"`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema:"pass as cursor for more; absent on the last page"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func summary(d projections.Device) DeviceSummary {
	s := DeviceSummary{ID: d.ID, Name: d.Name, Label: str(d.Label), Group: str(d.Group), Type: str(d.Type),
		Presence: d.Presence, Watched: d.Watched, Ignored: d.Ignored, MAC: str(d.MAC), Vendor: str(d.Vendor),
		IPs: []string{}, OpenPorts: len(d.Ports), FirstSeen: d.FirstSeen.UTC(), LastSeen: d.LastSeen.UTC()}
	for _, a := range d.Addresses {
		if a.RetiredAt == nil {
			s.IPs = append(s.IPs, a.IP)
		}
	}
	return s
}

func limit(n, def, max int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 1 || n > max:
		return 0, fmt.Errorf("limit %d: use 1 to %d", n, max)
	}
	return n, nil
}

func (t *tools) search(ctx context.Context, _ *sdk.CallToolRequest, in SearchIn) (*sdk.CallToolResult, SearchOut, error) {
	f := projections.DeviceFilter{Q: in.Q, Group: in.Group, Presence: in.Presence, Watched: in.Watched, Ignored: in.Ignored, Sort: in.Sort, Cursor: in.Cursor}
	var err error
	if f.Limit, err = limit(in.Limit, 20, 100); err != nil {
		return nil, SearchOut{}, err
	}
	switch in.Presence {
	case "", projections.PresenceOnline, projections.PresenceOffline, projections.PresenceQuiet:
	default:
		return nil, SearchOut{}, fmt.Errorf("presence %q: use online, offline or quiet", in.Presence)
	}
	switch in.Sort {
	case "", "name", "-name", "ip", "-ip", "first_seen", "-first_seen", "last_seen", "-last_seen":
	default:
		return nil, SearchOut{}, fmt.Errorf("sort %q: use name, ip, first_seen or last_seen, with a leading - for descending", in.Sort)
	}
	if in.Network != "" {
		p, err := netip.ParsePrefix(in.Network)
		if err != nil {
			return nil, SearchOut{}, fmt.Errorf("network %q: give a CIDR prefix such as 192.168.1.0/24", in.Network)
		}
		p = p.Masked()
		f.Network = &p
	}
	page, err := t.d.Inventory.ListDevices(ctx, f)
	if errors.Is(err, projections.ErrBadCursor) {
		return nil, SearchOut{}, errors.New("cursor: pass next_cursor of the previous call unchanged, or leave it out")
	}
	if err != nil {
		return nil, SearchOut{}, err
	}
	out := SearchOut{Devices: make([]DeviceSummary, 0, len(page.Items))}
	for _, d := range page.Items {
		out.Devices = append(out.Devices, summary(d))
	}
	if page.NextCursor != nil {
		out.NextCursor = *page.NextCursor
	}
	return nil, out, nil
}

// DeviceIn names one device.
type DeviceIn struct {
	ID string `json:"id" jsonschema:"the device id (from search_devices)"`
}

func (t *tools) device(ctx context.Context, id string) (projections.Device, error) {
	if id == "" {
		return projections.Device{}, errors.New("id: give a device id from search_devices")
	}
	d, err := t.d.Inventory.Device(ctx, id)
	if errors.Is(err, projections.ErrNotFound) {
		return projections.Device{}, fmt.Errorf("no device has id %q: find it with search_devices", id)
	}
	return d, err
}

func (t *tools) getDevice(ctx context.Context, _ *sdk.CallToolRequest, in DeviceIn) (*sdk.CallToolResult, projections.Device, error) {
	d, err := t.device(ctx, in.ID)
	return nil, deviceOut(d), err
}

// ChangesIn are the arguments of change_log.
type ChangesIn struct {
	Device string   `json:"device,omitempty" jsonschema:"only changes of this device id"`
	Kinds  []string `json:"kinds,omitempty" jsonschema:"only these kinds, e.g. device.discovered, device.online, device.offline, device.quiet, device.port_opened"`
	Since  string   `json:"since,omitempty" jsonschema:"only changes at or after this RFC 3339 time"`
	Until  string   `json:"until,omitempty" jsonschema:"only changes before this RFC 3339 time"`
	Limit  int      `json:"limit,omitempty" jsonschema:"most entries returned, 1 to 200 (default 50)"`
	Cursor string   `json:"cursor,omitempty" jsonschema:"next_cursor of the previous call"`
}

// ChangesOut is a page of change-log entries, newest first.
type ChangesOut struct {
	Changes    []projections.ChangeEntry `json:"changes"`
	NextCursor string                    `json:"next_cursor,omitempty"`
}

func parseTime(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%s %q: give an RFC 3339 time such as 2026-03-01T00:00:00Z", name, v)
	}
	t = t.UTC()
	return &t, nil
}

func (t *tools) changes(ctx context.Context, _ *sdk.CallToolRequest, in ChangesIn) (*sdk.CallToolResult, ChangesOut, error) {
	f := projections.EventFilter{Device: in.Device, Kinds: in.Kinds, Cursor: in.Cursor}
	// An unknown kind or device is an error, as in the API: an empty
	// answer would read as "nothing changed".
	known := projections.ChangeKinds()
	for _, k := range in.Kinds {
		if !slices.Contains(known, k) {
			return nil, ChangesOut{}, fmt.Errorf("kinds: %q is not a change-log kind: use one of %s", k, strings.Join(known, ", "))
		}
	}
	if in.Device != "" {
		if _, err := t.device(ctx, in.Device); err != nil {
			return nil, ChangesOut{}, err
		}
	}
	var err error
	if f.Limit, err = limit(in.Limit, 50, 200); err != nil {
		return nil, ChangesOut{}, err
	}
	if f.Since, err = parseTime("since", in.Since); err != nil {
		return nil, ChangesOut{}, err
	}
	if f.Until, err = parseTime("until", in.Until); err != nil {
		return nil, ChangesOut{}, err
	}
	page, err := t.d.Inventory.ListEvents(ctx, f)
	if errors.Is(err, projections.ErrBadCursor) {
		return nil, ChangesOut{}, errors.New("cursor: pass next_cursor of the previous call unchanged")
	}
	if err != nil {
		return nil, ChangesOut{}, err
	}
	out := ChangesOut{Changes: page.Items}
	if out.Changes == nil {
		out.Changes = []projections.ChangeEntry{}
	}
	if page.NextCursor != nil {
		out.NextCursor = *page.NextCursor
	}
	return nil, out, nil
}

// ScansIn are the arguments of list_scans.
type ScansIn struct {
	Source string `json:"source,omitempty" jsonschema:"only scans of this source, e.g. sweep:lan"`
	Since  string `json:"since,omitempty" jsonschema:"only scans started at or after this RFC 3339 time"`
	Until  string `json:"until,omitempty" jsonschema:"only scans started before this RFC 3339 time"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most scans returned, 1 to 100 (default 20)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous call"`
}

// ScansOut is a page of scans, newest first.
type ScansOut struct {
	Scans      []projections.Scan `json:"scans"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

func (t *tools) scans(ctx context.Context, _ *sdk.CallToolRequest, in ScansIn) (*sdk.CallToolResult, ScansOut, error) {
	f := projections.ScanFilter{Source: in.Source, Cursor: in.Cursor}
	var err error
	if f.Limit, err = limit(in.Limit, 20, 100); err != nil {
		return nil, ScansOut{}, err
	}
	if f.Since, err = parseTime("since", in.Since); err != nil {
		return nil, ScansOut{}, err
	}
	if f.Until, err = parseTime("until", in.Until); err != nil {
		return nil, ScansOut{}, err
	}
	page, err := t.d.Scans.ListScans(ctx, f)
	if err != nil {
		return nil, ScansOut{}, err
	}
	out := ScansOut{Scans: make([]projections.Scan, 0, len(page.Items))}
	for _, sc := range page.Items {
		out.Scans = append(out.Scans, scanOut(sc))
	}
	if page.NextCursor != nil {
		out.NextCursor = *page.NextCursor
	}
	return nil, out, nil
}

func (t *tools) stats(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, projections.Stats, error) {
	s, err := t.d.Inventory.Stats(ctx)
	return nil, statsOut(s), err
}

// EditIn are the arguments of edit_device.
type EditIn struct {
	ID      string   `json:"id" jsonschema:"the device id"`
	Label   *string  `json:"label,omitempty" jsonschema:"new label, at most 128 characters"`
	Group   *string  `json:"group,omitempty" jsonschema:"new group, at most 64 characters"`
	Type    *string  `json:"type,omitempty" jsonschema:"new type (e.g. printer), at most 64 characters"`
	Notes   *string  `json:"notes,omitempty" jsonschema:"new notes, at most 4096 characters"`
	Ignored *bool    `json:"ignored,omitempty" jsonschema:"hide (true) or show (false) the device in lists"`
	Clear   []string `json:"clear,omitempty" jsonschema:"fields to empty: label, group, type and/or notes"`
}

func (t *tools) edit(ctx context.Context, req *sdk.CallToolRequest, in EditIn) (*sdk.CallToolResult, projections.Device, error) {
	actor, write := caller(req)
	if !write {
		return nil, projections.Device{}, errReadOnly
	}
	if _, err := t.device(ctx, in.ID); err != nil {
		return nil, projections.Device{}, err
	}
	given := map[string]*string{"label": in.Label, "group": in.Group, "type": in.Type, "notes": in.Notes}
	for _, f := range in.Clear {
		if given[f] != nil {
			return nil, projections.Device{}, fmt.Errorf("%s is both given and in clear: give one or the other", f)
		}
	}
	e := command.DeviceEdit{Label: in.Label, Group: in.Group, Type: in.Type, Notes: in.Notes, Ignored: in.Ignored, Clear: in.Clear}
	if e.Label == nil && e.Group == nil && e.Type == nil && e.Notes == nil && e.Ignored == nil && len(e.Clear) == 0 {
		return nil, projections.Device{}, errors.New("nothing to change: give label, group, type, notes, ignored or clear")
	}
	d, err := t.d.Commander.EditDevice(ctx, actor, in.ID, e)
	var inv *command.Invalid
	if errors.As(err, &inv) {
		return nil, projections.Device{}, errors.New(inv.Error())
	}
	return nil, deviceOut(d), err
}

// WatchIn are the arguments of watch_device.
type WatchIn struct {
	ID      string `json:"id" jsonschema:"the device id"`
	Watched bool   `json:"watched" jsonschema:"true to watch (a watched device that is not seen becomes quiet, and notifications can follow it), false to stop"`
}

func (t *tools) watch(ctx context.Context, req *sdk.CallToolRequest, in WatchIn) (*sdk.CallToolResult, projections.WatchState, error) {
	actor, write := caller(req)
	if !write {
		return nil, projections.WatchState{}, errReadOnly
	}
	if _, err := t.device(ctx, in.ID); err != nil {
		return nil, projections.WatchState{}, err
	}
	ws, err := t.d.Commander.SetWatch(ctx, actor, in.ID, in.Watched)
	return nil, ws, err
}

func ptrFalse() *bool { b := false; return &b }

// register adds the read tools, and the write tools when write is set.
func (t *tools) register(s *sdk.Server, write bool) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	// The writes set a value: doing one twice is doing it once, and they
	// delete nothing (clear empties a text field the user set).
	rw := &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptrFalse()}
	sdk.AddTool(s, &sdk.Tool{Name: "search_devices", Annotations: ro, Description: "Find devices in the inventory. " +
		"Returns up to limit (default 20, at most 100) device summaries: id, name, label, group, type, presence (online, offline, quiet), " +
		"watched, ignored, MAC, vendor, current IP addresses, number of open ports, first and last seen (RFC 3339 UTC); " +
		"next_cursor when there are more. All filters are optional and combine."}, t.search)
	sdk.AddTool(s, &sdk.Tool{Name: "get_device", Annotations: ro, Description: "Everything known about one device: " +
		"names by source (dns, mdns, netbios, dhcp, router...) with when each was last confirmed, evidence (which source set each field), " +
		"every address with first/last seen and retired_at, open TCP ports with service names, advertised services, presence, " +
		"where it is attached (switch port or access point), user label/group/type/notes. " +
		"An id that no device has is an error (find ids with search_devices)."}, t.getDevice)
	sdk.AddTool(s, &sdk.Tool{Name: "change_log", Annotations: ro, Description: "The change log, newest first: " +
		"entries with id, time (RFC 3339 UTC), kind (device.discovered, device.online, device.offline, device.quiet, device.address_added, " +
		"device.address_retired, device.mac_changed, device.name_changed, device.port_opened, device.port_closed, device.edited, " +
		"device.watch_started, device.watch_stopped, device.attached, device.deleted, and source.failing / source.recovered with an empty device_id), device_id, source, actor, a one-sentence summary " +
		"and old/new data. Give device for one device's history. Up to limit entries (default 50, at most 200)."}, t.changes)
	sdk.AddTool(s, &sdk.Tool{Name: "list_scans", Annotations: ro, Description: "Past device sweeps, port scans and router reads, newest first: " +
		"source, kind, start and finish (RFC 3339 UTC), duration_ms (milliseconds), networks, probes sent, hosts found, complete, errors. " +
		"Up to limit scans (default 20, at most 100)."}, t.scans)
	sdk.AddTool(s, &sdk.Tool{Name: "inventory_stats", Annotations: ro, Description: "Counts across the inventory: devices in all, " +
		"by presence, by group, by network and by source; watched and ignored devices; the newest device."}, t.stats)
	if !write {
		return
	}
	sdk.AddTool(s, &sdk.Tool{Name: "edit_device", Annotations: rw, Description: "Change a device's label, group, type, notes or ignored flag " +
		"(needs a read_write token). Fields left out stay; clear empties text fields. Returns the whole device after the change. " +
		"The change is recorded in the event log with this token as actor."}, t.edit)
	sdk.AddTool(s, &sdk.Tool{Name: "watch_device", Annotations: rw, Description: "Start or stop watching a device (needs a read_write token). " +
		"A watched device that is not seen within the online window becomes quiet. Returns watched and presence."}, t.watch)
}
