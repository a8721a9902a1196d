package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// History is the inventory at past instants (projections/inventory:
// DevicesAt, StatsAt, Diff), the same the API's ?at= and /api/diff use.
// Each returns an error matching history.ErrCompacted (a
// *history.CompactedError naming the earliest instant that works) for an
// instant before the kept history. Optional: without it there is no
// History page.
type History interface {
	DevicesAt(ctx context.Context, t time.Time) ([]history.Device, error)
	StatsAt(ctx context.Context, t time.Time) (history.Stats, error)
	Diff(ctx context.Context, from, to time.Time) (history.Diff, error)
}

// Merger is an optional interface of the Commander: joining devices and
// separating them again (events/command.Commander implements it), with
// the signed-in user as the actor. They return a *command.Refused when
// the other device cannot be merged or unmerged, a *command.Invalid for a
// missing or unknown other device or the device itself. Without it the device page
// has no merge form.
type Merger interface {
	MergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error)
	UnmergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error)
}

// mergedError is how the inventory says an id was merged into another
// (projections/inventory.MergedError).
type mergedError interface {
	error
	MergedInto() string
}

// mergedInto is the device id was merged into, or "".
func mergedInto(err error) string {
	var m mergedError
	if errors.As(err, &m) {
		return m.MergedInto()
	}
	return ""
}

// mergedView is the page of a device merged into another.
type mergedView struct {
	ID, Into string
}

func (v mergedView) PageTitle() string { return "Device " + v.ID }

// memberRow is a device merged into the one shown.
type memberRow struct {
	ID      string
	Summary string
	Time    time.Time
}

// members are the devices merged into id (directly or through another
// member), from the change log's merge entries, each checked against the
// inventory (a later unmerge leaves an entry behind).
func (s *Server) members(ctx context.Context, id string) ([]memberRow, error) {
	page, err := s.inv.ListEvents(ctx, projections.EventFilter{Device: id, Limit: 1000, Kinds: []string{projections.ChangeMerged}})
	if err != nil {
		return nil, err
	}
	var out []memberRow
	seen := map[string]bool{}
	for _, e := range page.Items {
		if e.Kind != projections.ChangeMerged || e.Data == nil {
			continue
		}
		other, ok := e.Data.New.(string)
		if !ok || other == "" || seen[other] {
			continue
		}
		seen[other] = true
		_, err := s.inv.Device(ctx, other)
		if mergedInto(err) != id {
			continue
		}
		out = append(out, memberRow{ID: other, Summary: e.Summary, Time: e.Time})
	}
	slices.SortFunc(out, func(a, b memberRow) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// mergeForm is the merge form's state on the device page.
type mergeForm struct {
	On      bool // the write side can merge
	Other   string
	Problem string
	Done    string
}

// deviceMerge merges the form's device into the page's.
func (s *Server) deviceMerge(w http.ResponseWriter, r *http.Request) error {
	return s.merging(w, r, false)
}

// deviceUnmerge separates the form's device from the page's.
func (s *Server) deviceUnmerge(w http.ResponseWriter, r *http.Request) error {
	return s.merging(w, r, true)
}

func (s *Server) merging(w http.ResponseWriter, r *http.Request, unmerge bool) error {
	if s.merge == nil {
		return errNotFound("Merging devices is not available on this server.")
	}
	rs := sessionFrom(r.Context())
	id := r.PathValue("id")
	other := strings.TrimSpace(r.PostForm.Get("device"))
	do, done := s.merge.MergeDevices, "merged"
	if unmerge {
		do, done = s.merge.UnmergeDevices, "separated"
	}
	var err error
	if other == "" {
		err = errBadRequest("Enter the id of the other device (shown in its page's address, /devices/<id>).")
	} else if len(other) > 256 {
		err = errBadRequest("That is not a device id: it is too long.")
	} else {
		_, err = do(r.Context(), rs.sess.User, id, other)
	}
	if err != nil {
		if !isUserError(err) {
			return err
		}
		v, verr := s.deviceView(r, id, timelineQuery{})
		if verr != nil {
			return verr
		}
		v.Merge.Problem = apiHint.ReplaceAllString(userMessage(err), "")
		if !unmerge {
			v.Merge.Other = other
		}
		s.render(w, r, http.StatusBadRequest, "device", v)
		return nil
	}
	http.Redirect(w, r, "/devices/"+url.PathEscape(id)+"?"+done+"="+url.QueryEscape(other), http.StatusSeeOther)
	return nil
}

// apiHint matches the API directions in the write side's refusals
// ("(POST /api/devices/x/unmerge)", ": list the devices with GET
// /api/devices"), which the page has its own buttons and links for.
var apiHint = regexp.MustCompile(` \((?:POST|GET) /api/[^)]*\)|: list the devices with GET /api/devices`)

// historyView is the History page.
type historyView struct {
	// At, From and To are the form's values (datetime-local, in the
	// configured zone).
	At, From, To string
	Zone         string
	// Shown: a device list at At is on the page.
	Shown   bool
	AtTime  time.Time
	Devices []histRow
	Stats   history.Stats
	Groups  []groupCount
	// Diffed: a diff between From and To is on the page.
	Diffed  bool
	Diff    history.Diff
	Changed []changedRow
	// Problem says why an instant cannot be shown; Earliest links to
	// the earliest instant that can.
	Problem     string
	EarliestURL string
}

type histRow struct {
	D       history.Device
	Current []string // addresses not retired at the instant
}

type groupCount struct {
	Key string
	N   int
}

type changedRow struct {
	ID, Name string
	Fields   []fieldRow
}

type fieldRow struct {
	Field, From, To string
}

// localLayout is the datetime-local input's value.
const localLayout = "2006-01-02T15:04"

// parseInstant reads a datetime-local value (in loc) or an RFC 3339 time.
func parseInstant(name, v string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{localLayout, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, errBadRequest(fmt.Sprintf("The %s time %q is not a time: use the date picker, or 2006-01-02T15:04 (in %s).", name, v, zoneName(loc, time.Now())))
}

func (s *Server) historyPage(w http.ResponseWriter, r *http.Request) error {
	if s.hist == nil {
		return errNotFound("This server keeps no history of the inventory.")
	}
	q, err := newQuery(r, "at", "from", "to")
	if err != nil {
		return err
	}
	loc := s.cfg.Location
	v := historyView{At: q.str("at"), From: q.str("from"), To: q.str("to"), Zone: zoneName(loc, s.now())}
	if v.At == "" && v.From == "" && v.To == "" {
		v.At = s.now().In(loc).Format(localLayout)
	}
	ctx := r.Context()
	status := http.StatusOK
	compacted := func(err error) bool {
		var ce *history.CompactedError
		if !errors.As(err, &ce) {
			return false
		}
		v.Problem = fmt.Sprintf("%s is before the kept history (older changes were compacted by retention). The earliest instant that can be shown is %s.",
			fmtTime(ce.At, loc), fmtTime(ce.Earliest, loc))
		// datetime-local has minute precision: the next whole minute
		// is the earliest value the form can send that works.
		e := ce.Earliest.In(loc)
		if t := e.Truncate(time.Minute); !t.Equal(e) {
			e = t.Add(time.Minute)
		}
		u := url.Values{"at": {e.Format(localLayout)}}
		v.EarliestURL = "/history?" + u.Encode()
		status = http.StatusGone
		return true
	}
	if v.At != "" {
		at, err := parseInstant("“at”", v.At, loc)
		if err != nil {
			return err
		}
		v.AtTime = at
		ds, err := s.hist.DevicesAt(ctx, at)
		if err == nil {
			v.Stats, err = s.hist.StatsAt(ctx, at)
		}
		switch {
		case compacted(err):
		case err != nil:
			return err
		default:
			v.Shown = true
			for _, d := range ds {
				row := histRow{D: d}
				for _, a := range d.Addresses {
					if a.RetiredAt == nil || a.RetiredAt.After(at) {
						row.Current = append(row.Current, a.IP)
					}
				}
				v.Devices = append(v.Devices, row)
			}
			sort.SliceStable(v.Devices, func(i, j int) bool { return v.Devices[i].D.Name < v.Devices[j].D.Name })
			for k, n := range v.Stats.ByGroup {
				v.Groups = append(v.Groups, groupCount{k, n})
			}
			slices.SortFunc(v.Groups, func(a, b groupCount) int { return strings.Compare(a.Key, b.Key) })
		}
	}
	if v.From != "" || v.To != "" {
		if v.From == "" || v.To == "" {
			return errBadRequest("To see the changes between two instants, give both “from” and “to”.")
		}
		from, err := parseInstant("“from”", v.From, loc)
		if err != nil {
			return err
		}
		to, err := parseInstant("“to”", v.To, loc)
		if err != nil {
			return err
		}
		if to.Before(from) {
			return errBadRequest("“to” must not be before “from”.")
		}
		d, err := s.hist.Diff(ctx, from, to)
		switch {
		case compacted(err):
		case err != nil:
			return err
		default:
			v.Diffed, v.Diff = true, d
			for _, c := range d.Changed {
				row := changedRow{ID: c.ID, Name: c.Name}
				for _, f := range history.DiffFields {
					if fc, ok := c.Fields[f]; ok {
						row.Fields = append(row.Fields, fieldRow{Field: f, From: fieldText(fc.From, loc), To: fieldText(fc.To, loc)})
					}
				}
				for f, fc := range c.Fields {
					if !slices.Contains(history.DiffFields, f) {
						row.Fields = append(row.Fields, fieldRow{Field: f, From: fieldText(fc.From, loc), To: fieldText(fc.To, loc)})
					}
				}
				v.Changed = append(v.Changed, row)
			}
		}
	}
	s.render(w, r, status, "history", v)
	return nil
}

// fieldText writes a diff value for a person: "—" for none, lists joined,
// addresses as their IPs, other values as compact text.
func fieldText(v any, loc *time.Location) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case string:
		if x == "" {
			return "—"
		}
		return x
	case *string:
		if x == nil {
			return "—"
		}
		return *x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []string:
		if len(x) == 0 {
			return "—"
		}
		return strings.Join(x, ", ")
	case []history.Port:
		if len(x) == 0 {
			return "—"
		}
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, p.Proto)
			if p.Service != "" {
				parts[i] += " (" + p.Service + ")"
			}
		}
		return strings.Join(parts, ", ")
	case map[string]history.Name:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + x[k].Name
		}
		if len(parts) == 0 {
			return "—"
		}
		return strings.Join(parts, ", ")
	case []history.Address:
		var parts []string
		for _, a := range x {
			p := a.IP
			if a.RetiredAt != nil {
				p += " (retired " + fmtTime(*a.RetiredAt, loc) + ")"
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			return "—"
		}
		return strings.Join(parts, ", ")
	case *history.Attachment:
		if x == nil {
			return "—"
		}
		out := x.Source
		if x.Peer != "" {
			out += " " + x.Peer
		}
		if x.Port != "" {
			out += " port " + x.Port
		}
		if x.SSID != "" {
			out += " SSID " + x.SSID
		}
		return out
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}
