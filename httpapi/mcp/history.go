package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// AtIn are the arguments of inventory_at.
type AtIn struct {
	At    string `json:"at" jsonschema:"the instant, RFC 3339 (for example 2026-11-17T02:14:00Z)"`
	ID    string `json:"id,omitempty" jsonschema:"one device's id: only that device as it was then"`
	Q     string `json:"q,omitempty" jsonschema:"only devices whose name, MAC, vendor, label or an address contains this text (case-insensitive)"`
	Limit int    `json:"limit,omitempty" jsonschema:"most devices returned, 1 to 200 (default 50)"`
}

// AtOut is the inventory as it was at an instant.
type AtOut struct {
	At time.Time `json:"at"`
	// Total counts the devices that matched; Devices holds the first
	// limit of them by name.
	Total   int              `json:"total"`
	Devices []history.Device `json:"devices"`
	Stats   *history.Stats   `json:"stats,omitempty"`
}

// DiffIn are the arguments of inventory_diff.
type DiffIn struct {
	From  string `json:"from" jsonschema:"the earlier instant, RFC 3339"`
	To    string `json:"to" jsonschema:"the later instant, RFC 3339"`
	Limit int    `json:"limit,omitempty" jsonschema:"most entries returned in each of added, removed and changed, 1 to 200 (default 50)"`
}

// DiffOut is what changed between two instants, each list cut to limit.
type DiffOut struct {
	history.Diff
	AddedTotal   int `json:"added_total"`
	RemovedTotal int `json:"removed_total"`
	ChangedTotal int `json:"changed_total"`
}

// historyErr says what to do about an instant before the kept history
// or an unknown device.
func historyErr(err error, id string) error {
	var ce *history.CompactedError
	var merged interface{ MergedInto() string }
	switch {
	case errors.As(err, &merged):
		return fmt.Errorf("device %q was merged into %q at that instant: ask for %q", id, merged.MergedInto(), merged.MergedInto())
	case errors.As(err, &ce):
		return fmt.Errorf("%s: ask for a later instant", ce.Error())
	case errors.Is(err, projections.ErrNotFound):
		return fmt.Errorf("no device %q at that instant: find ids with search_devices, or ask for a later instant", id)
	}
	return err
}

// notFuture refuses an instant past now (with httpapi's skew): the
// inventory is known up to now.
func notFuture(name string, at, now time.Time) error {
	if at.After(now.Add(httpapi.FutureSkew)) {
		return fmt.Errorf("%s is in the future: the inventory is known up to now; give a past instant", name)
	}
	return nil
}

func requiredTime(name, v string) (time.Time, error) {
	t, err := parseTime(name, v)
	if err != nil {
		return time.Time{}, err
	}
	if t == nil {
		return time.Time{}, fmt.Errorf("%s is required: give an RFC 3339 time such as 2026-03-01T00:00:00Z", name)
	}
	return *t, nil
}

func (t *tools) inventoryAt(ctx context.Context, _ *sdk.CallToolRequest, in AtIn) (*sdk.CallToolResult, AtOut, error) {
	at, err := requiredTime("at", in.At)
	if err != nil {
		return nil, AtOut{}, err
	}
	if err := notFuture("at", at, t.now()); err != nil {
		return nil, AtOut{}, err
	}
	n, err := limit(in.Limit, 50, 200)
	if err != nil {
		return nil, AtOut{}, err
	}
	out := AtOut{At: at, Devices: []history.Device{}}
	if in.ID != "" {
		d, err := t.d.History.DeviceAt(ctx, in.ID, at)
		if err != nil {
			return nil, AtOut{}, historyErr(err, in.ID)
		}
		out.Total, out.Devices = 1, normDevices([]history.Device{d})
		return nil, out, nil
	}
	ds, err := t.d.History.DevicesAt(ctx, at)
	if err != nil {
		return nil, AtOut{}, historyErr(err, "")
	}
	st, err := t.d.History.StatsAt(ctx, at)
	if err != nil {
		return nil, AtOut{}, historyErr(err, "")
	}
	normStats(&st)
	out.Stats = &st
	q := strings.ToLower(in.Q)
	for k := range ds {
		if (history.Filter{Q: q}).Match(&ds[k]) {
			out.Total++
			out.Devices = append(out.Devices, ds[k])
		}
	}
	slices.SortFunc(out.Devices, func(a, b history.Device) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out.Devices = normDevices(out.Devices[:min(n, len(out.Devices))])
	return nil, out, nil
}

func (t *tools) inventoryDiff(ctx context.Context, _ *sdk.CallToolRequest, in DiffIn) (*sdk.CallToolResult, DiffOut, error) {
	from, err := requiredTime("from", in.From)
	if err != nil {
		return nil, DiffOut{}, err
	}
	to, err := requiredTime("to", in.To)
	if err != nil {
		return nil, DiffOut{}, err
	}
	if err := notFuture("to", to, t.now()); err != nil {
		return nil, DiffOut{}, err
	}
	if !from.Before(to) {
		return nil, DiffOut{}, errors.New("from must be before to")
	}
	n, err := limit(in.Limit, 50, 200)
	if err != nil {
		return nil, DiffOut{}, err
	}
	d, err := t.d.History.Diff(ctx, from, to)
	if err != nil {
		return nil, DiffOut{}, historyErr(err, "")
	}
	out := DiffOut{Diff: d, AddedTotal: len(d.Added), RemovedTotal: len(d.Removed), ChangedTotal: len(d.Changed)}
	out.Added = normDevices(d.Added[:min(n, len(d.Added))])
	out.Removed = normDevices(d.Removed[:min(n, len(d.Removed))])
	out.Changed = nonNil(d.Changed[:min(n, len(d.Changed))])
	for k := range out.Changed {
		if out.Changed[k].Fields == nil {
			out.Changed[k].Fields = map[string]history.FieldChange{}
		}
	}
	return nil, out, nil
}

// normDevice makes d's collections empty instead of null, as the tools'
// output schema wants.
func normDevice(d *history.Device) {
	if d.Names == nil {
		d.Names = map[string]history.Name{}
	}
	d.Addresses, d.Ports, d.Sources = nonNil(d.Addresses), nonNil(d.Ports), nonNil(d.Sources)
}

func normDevices(ds []history.Device) []history.Device {
	ds = nonNil(ds)
	for k := range ds {
		normDevice(&ds[k])
	}
	return ds
}

func normStats(st *history.Stats) {
	for _, m := range []*map[string]int{&st.ByPresence, &st.ByGroup, &st.ByNetwork, &st.BySource} {
		if *m == nil {
			*m = map[string]int{}
		}
	}
	if st.NewestDevice != nil {
		normDevice(st.NewestDevice)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// registerHistory offers the past-inventory tools when the history reader
// is there.
func (t *tools) registerHistory(s *sdk.Server) {
	if t.d.History == nil {
		return
	}
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: "inventory_at", Annotations: ro, Description: "The inventory as it was at a past instant " +
		"(\"what was on my network at 02:14 last Tuesday\"): each device's name, names by source, MAC, vendor, addresses " +
		"(with first_seen and retired_at), open ports, label, group, type, notes, ignored, watched, presence as it was then, " +
		"attachment and first_seen; with id, one device; else the devices sorted by name (up to limit, default 50, at most 200; " +
		"total says how many matched q) and the counts at that instant. An instant before the kept history is refused with the " +
		"earliest one that works. Times RFC 3339 UTC."}, t.inventoryAt)
	sdk.AddTool(s, &sdk.Tool{Name: "inventory_diff", Annotations: ro, Description: "What changed between two instants " +
		"(\"what changed since Friday\"): devices added (present at to, not at from), removed (the reverse) and changed, each " +
		"changed device with its fields' values at from and at to (name, names, mac, addresses, ports, vendor, label, group, " +
		"type, notes, ignored, watched, presence, attached_to). Each list is cut to limit (default 50, at most 200); " +
		"added_total, removed_total and changed_total give the full counts."}, t.inventoryDiff)
}
