package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// HistoryReader is an optional interface of an Inventory: the inventory
// as it was at an instant (at= on GET /api/devices, /api/devices/{id} and
// /api/stats) and the difference of two instants (GET /api/diff). Each
// returns an error matching history.ErrCompacted (a
// *history.CompactedError naming the earliest instant that works) for an
// instant before the kept history; DeviceAt returns projections.ErrNotFound
// for a device that did not exist at that instant.
type HistoryReader interface {
	DeviceAt(ctx context.Context, id string, at time.Time) (history.Device, error)
	DevicesAt(ctx context.Context, at time.Time) ([]history.Device, error)
	StatsAt(ctx context.Context, at time.Time) (history.Stats, error)
	Diff(ctx context.Context, from, to time.Time) (history.Diff, error)
}

// slugHistoryCompacted is the problem of an instant before the kept
// history (410).
const slugHistoryCompacted = "history-compacted"

// hasAt reports whether the request's query has at= (the history form of
// the endpoint).
func hasAt(r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return false
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	return err == nil && vals.Has("at")
}

// historyReader returns the inventory's HistoryReader; without one the history
// endpoints answer 404 not-recorded.
func (s *server) historyReader() (HistoryReader, error) {
	h, ok := s.inv.(HistoryReader)
	if !ok {
		return nil, errNotRecorded("this inventory keeps no history: at= and /api/diff are not available")
	}
	return h, nil
}

// historyError maps the errors of a HistoryReader: 410 for an instant
// before the kept history, naming the earliest that works.
func historyError(err error, what string) error {
	var ce *history.CompactedError
	if errors.As(err, &ce) {
		e := ce.Earliest.UTC()
		p := newProblem(http.StatusGone, slugHistoryCompacted, "History compacted",
			fmt.Sprintf("%s is before the kept history (retention removed what came before): ask for %s or later",
				ce.At.UTC().Format(time.RFC3339Nano), e.Format(time.RFC3339Nano)))
		p.Earliest = e.Format(time.RFC3339Nano)
		return p
	}
	return fmt.Errorf("httpapi: %s: %w", what, err)
}

// atParam reads a required RFC 3339 instant.
func atParam(q *query, name string, now time.Time) time.Time {
	t := q.time(name)
	if t == nil {
		if _, given := q.vals[name]; !given {
			q.fail(name, "missing: give an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
		}
		return time.Time{}
	}
	if t.After(now.Add(FutureSkew)) {
		q.fail(name, "in the future: the inventory is known up to now; give a past instant")
		return time.Time{}
	}
	return *t
}

// FutureSkew is how far past the server's clock an instant may be (a
// client's clock running ahead) before it counts as the future.
const FutureSkew = time.Minute

// devicesAtPage is GET /api/devices?at=: one page of the devices as they
// were at At, in the order of sort.
type devicesAtPage struct {
	At         time.Time        `json:"at"`
	Items      []history.Device `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}

var devicesAtParams = map[string]bool{
	"at": false, "q": false, "group": false, "presence": false, "network": false,
	"watched": false, "ignored": false, "sort": false, "limit": false, "cursor": false,
}

// Sort orders of the device list at an instant: the live list's
// (deviceSorts) but last_seen, which the history rows do not keep.
var deviceAtSorts = []string{"name", "-name", "ip", "-ip", "first_seen", "-first_seen"}

// atSort reads sort of GET /api/devices?at= (default name) as a
// history.Order; the spec returned ("-ip"...) is what cursors carry.
func atSort(q *query) (history.Order, string) {
	v, _ := q.raw("sort")
	if field := strings.TrimPrefix(v, "-"); field == "last_seen" {
		q.fail("sort", fmt.Sprintf("%q is not allowed with at: last_seen is not kept for past instants; use one of %s, or leave at out for the live list",
			v, strings.Join(deviceAtSorts, ", ")))
		return history.Order{}, ""
	}
	spec := q.oneOf("sort", deviceAtSorts...)
	if spec == "" {
		spec = "name"
	}
	field, desc := strings.CutPrefix(spec, "-")
	return history.Order{Field: field, Desc: desc}, spec
}

// atCursor reads the cursor of GET /api/devices?at=: the base64url of
// "h", the sort spec, NUL, the order's key of the last device of the page
// (history.Order.Key), NUL and its id. It returns the test of whether a
// device comes after it, nil without a cursor.
func atCursor(q *query, order history.Order, spec string) func(d *history.Device) bool {
	raw := q.cursor()
	if raw == "" || spec == "" {
		return nil
	}
	bad := func() func(d *history.Device) bool {
		q.fail("cursor", "not a cursor this endpoint gave for this sort: pass next_cursor unchanged with the same sort, or start again without it")
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || !bytes.HasPrefix(b, []byte("h")) {
		return bad()
	}
	gotSpec, rest, ok := strings.Cut(string(b[1:]), "\x00")
	k := strings.LastIndexByte(rest, 0)
	if !ok || gotSpec != spec || k < 0 || k == len(rest)-1 {
		return bad()
	}
	after, err := order.After(rest[:k], rest[k+1:])
	if err != nil {
		return bad()
	}
	return after
}

func encodeAtCursor(order history.Order, spec string, d *history.Device) string {
	return base64.RawURLEncoding.EncodeToString([]byte("h" + spec + "\x00" + order.Key(d) + "\x00" + d.ID))
}

// listDevicesAt answers GET /api/devices?at=T: the live list's filters
// and sorts (but last_seen), over the devices as they were at T.
func (s *server) listDevicesAt(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, devicesAtParams)
	if err != nil {
		return err
	}
	at := atParam(q, "at", s.now())
	limit := q.limit()
	sel := deviceSelection(q)
	f := history.Filter{Q: sel.Q, Group: sel.Group, Presence: sel.Presence, Network: sel.Network, Watched: sel.Watched, Ignored: sel.Ignored}
	order, spec := atSort(q)
	after := atCursor(q, order, spec)
	if err := q.err(); err != nil {
		return err
	}
	h, err := s.historyReader()
	if err != nil {
		return err
	}
	all, err := h.DevicesAt(r.Context(), at)
	if err != nil {
		return historyError(err, "listing devices at an instant")
	}
	ds := make([]*history.Device, 0, len(all))
	for k := range all {
		if d := &all[k]; f.Match(d) && (after == nil || after(d)) {
			ds = append(ds, d)
		}
	}
	if !slices.IsSortedFunc(ds, order.Compare) { // DevicesAt gives them by name
		slices.SortFunc(ds, order.Compare)
	}
	page := devicesAtPage{At: at, Items: make([]history.Device, 0, min(limit, len(ds)))}
	for _, d := range ds[:min(limit, len(ds))] {
		page.Items = append(page.Items, *d)
	}
	if len(ds) > limit {
		c := encodeAtCursor(order, spec, ds[limit-1])
		page.NextCursor = &c
	}
	return writeJSON(w, r, http.StatusOK, page)
}

// getDeviceAt answers GET /api/devices/{id}?at=T.
func (s *server) getDeviceAt(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, map[string]bool{"at": false})
	if err != nil {
		return err
	}
	at := atParam(q, "at", s.now())
	if err := q.err(); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	h, err := s.historyReader()
	if err != nil {
		return err
	}
	d, err := h.DeviceAt(r.Context(), id, at)
	var merged mergedError
	if errors.As(err, &merged) {
		return errDeviceMerged(id, merged.MergedInto())
	}
	if errors.Is(err, projections.ErrNotFound) {
		return newProblem(http.StatusNotFound, slugDeviceNotFound, "Device not found",
			fmt.Sprintf("no device had id %q at %s: list the devices of that instant with GET /api/devices?at=", id, at.Format(time.RFC3339Nano)))
	}
	if err != nil {
		return historyError(err, "reading device "+id+" at an instant")
	}
	return writeJSON(w, r, http.StatusOK, d)
}

// statsAt answers GET /api/stats?at=T.
func (s *server) statsAt(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, map[string]bool{"at": false})
	if err != nil {
		return err
	}
	at := atParam(q, "at", s.now())
	if err := q.err(); err != nil {
		return err
	}
	h, err := s.historyReader()
	if err != nil {
		return err
	}
	st, err := h.StatsAt(r.Context(), at)
	if err != nil {
		return historyError(err, "reading stats at an instant")
	}
	return writeJSON(w, r, http.StatusOK, st)
}

var diffParams = map[string]bool{"from": false, "to": false}

// diff answers GET /api/diff?from=T1&to=T2: the devices added, removed
// and changed (history.DiffFields) from T1 to T2.
func (s *server) diff(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, diffParams)
	if err != nil {
		return err
	}
	from, to := atParam(q, "from", s.now()), atParam(q, "to", s.now())
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		q.fail("to", "earlier than from: give to at or after from")
	}
	if err := q.err(); err != nil {
		return err
	}
	h, err := s.historyReader()
	if err != nil {
		return err
	}
	d, err := h.Diff(r.Context(), from, to)
	if err != nil {
		return historyError(err, "computing a diff")
	}
	return writeJSON(w, r, http.StatusOK, d)
}
