package ui

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/timeline"
	"github.com/jocasta/jocasta/projections/traffic"
)

// strip is the presence timeline drawn as an SVG strip (1000 units wide)
// of segments, one per span of a presence state.
type strip struct {
	Segments []segment
	Ticks    []tick
	From, To time.Time
}

type segment struct {
	X, W  string // in viewBox units, formatted
	Class string // online, offline, quiet, unknown
	Title string
}

type tick struct {
	X     string
	Label string
}

const stripWidth = 1000.0

// buildStrip turns the device's presence changes (any order) inside
// [from, to] into segments. Before the device was first seen the strip is
// "unknown"; before the first change inside the window the state is the
// one that change left (online before offline/quiet, offline before
// online); with no change at all it is the current presence.
func buildStrip(entries []projections.ChangeEntry, d projections.Device, from, to time.Time, loc *time.Location) strip {
	st := strip{From: from, To: to}
	if !to.After(from) {
		return st
	}
	evs := slices.Clone(entries)
	slices.SortFunc(evs, func(a, b projections.ChangeEntry) int { return a.Time.Compare(b.Time) })
	stateOf := func(kind string) string {
		switch kind {
		case projections.ChangeOffline:
			return "offline"
		case projections.ChangeQuiet:
			return "quiet"
		}
		return "online" // device.online, device.discovered
	}
	type change struct {
		at    time.Time
		state string
	}
	var changes []change
	start := d.Presence
	if len(evs) > 0 {
		if evs[0].Kind == projections.ChangeDiscovered {
			start = "unknown"
		} else if stateOf(evs[0].Kind) == "online" {
			start = "offline"
		} else {
			start = "online"
		}
	}
	if start == "" {
		start = "unknown"
	}
	if d.FirstSeen.After(from) {
		changes = append(changes, change{from, "unknown"})
		if len(evs) == 0 || evs[0].Kind != projections.ChangeDiscovered {
			changes = append(changes, change{d.FirstSeen, start})
		}
	} else {
		changes = append(changes, change{from, start})
	}
	for _, e := range evs {
		if e.Time.Before(from) || e.Time.After(to) {
			continue
		}
		changes = append(changes, change{e.Time, stateOf(e.Kind)})
	}
	span := to.Sub(from).Seconds()
	pos := func(t time.Time) float64 { return t.Sub(from).Seconds() / span * stripWidth }
	for i, c := range changes {
		end := to
		if i+1 < len(changes) {
			end = changes[i+1].at
		}
		if !end.After(c.at) {
			continue
		}
		x, w := pos(c.at), pos(end)-pos(c.at)
		if n := len(st.Segments); n > 0 && st.Segments[n-1].Class == c.state {
			prev := &st.Segments[n-1]
			pw, _ := strconv.ParseFloat(prev.W, 64)
			prev.W = fmtUnits(pw + w)
			continue
		}
		st.Segments = append(st.Segments, segment{
			X: fmtUnits(x), W: fmtUnits(w), Class: c.state,
			Title: c.state + " from " + fmtTime(c.at, loc),
		})
	}
	for day := 1; day < int(span/86400)+1; day++ {
		t := to.Add(-time.Duration(day) * 24 * time.Hour)
		if t.Before(from) {
			break
		}
		st.Ticks = append(st.Ticks, tick{X: fmtUnits(pos(t)), Label: strconv.Itoa(day) + "d"})
	}
	return st
}

func fmtUnits(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// timelineView is the device page's Timeline section: the device's
// changes and, where recorded, its hourly traffic and DNS totals, newest
// first (package projections/timeline, as GET /api/devices/{id}/timeline
// lists them), paged like the Change log.
type timelineView struct {
	Rows []timelineRow
	// From and To are the range shown; Last7 is true when neither since
	// nor until was given (the last 7 days, up to now).
	From, To time.Time
	Last7    bool
	// Since and Until are the date fields' values: the range's days as
	// given, empty when left out.
	Since, Until      string
	NextURL, FirstURL string
	ClearURL          string
}

// timelineRow is one entry as shown.
type timelineRow struct {
	Time    time.Time
	Kind    string
	Summary string
	By      string
	// Class is "traffic", "dns" or "change".
	Class string
}

// timelineQuery is what the device page's query asks of its Timeline.
type timelineQuery struct {
	since, until *time.Time
	// now is the page's now; from and to the range read (timeline.Range).
	now, from, to time.Time
	cursor        string
	limit         int
	// params are since, until and limit as given, for the page links.
	params url.Values
}

// timelineParams are the device page's query parameters of its Timeline.
var timelineParams = []string{"since", "until", "cursor", "limit"}

// deviceTimelineLimit is how many entries a Timeline page shows.
const deviceTimelineLimit = 50

// timelineQueryOf reads the Timeline's parameters: since and until as
// the Change log reads them (a bare date as until is that whole day),
// cursor a page link's.
func (s *Server) timelineQueryOf(q query) (timelineQuery, error) {
	tq := timelineQuery{cursor: q.str("cursor"), params: url.Values{}, now: s.now()}
	var err error
	if tq.since, err = q.time("since", s.cfg.Location, false); err != nil {
		return tq, err
	}
	if tq.until, err = q.time("until", s.cfg.Location, true); err != nil {
		return tq, err
	}
	if tq.limit, err = q.limit(deviceTimelineLimit); err != nil {
		return tq, err
	}
	// The range is checked before the page reads anything.
	tq.from, tq.to = timeline.Range(tq.since, tq.until, tq.now)
	if !tq.from.Before(tq.to) {
		return tq, errBadRequest("The Timeline's since must be before its until (and before now when until is empty).")
	}
	if tq.to.Sub(tq.from) > timeline.MaxRange {
		return tq, errBadRequest(fmt.Sprintf("The Timeline's range is longer than %d days: narrow since and until.", timeline.MaxRange/(24*time.Hour)))
	}
	if timeline.CheckCursor(tq.cursor) != nil {
		return tq, errBadRequest("The Timeline's cursor is not one this page gave: start again from the newest entries.")
	}
	for _, k := range []string{"since", "until", "limit"} {
		if v := q.str(k); v != "" {
			tq.params.Set(k, v)
		}
	}
	return tq, nil
}

// deviceTimeline reads a page of the device's Timeline.
func (s *Server) deviceTimeline(ctx context.Context, id string, tq timelineQuery) (timelineView, error) {
	v := timelineView{Last7: tq.since == nil && tq.until == nil, From: tq.from, To: tq.to}
	// The date fields show the days of the range as given (a time of day
	// in the query, which a date field cannot hold, shows as its day).
	if tq.since != nil {
		v.Since = v.From.In(s.cfg.Location).Format("2006-01-02")
	}
	if tq.until != nil {
		v.Until = v.To.Add(-time.Nanosecond).In(s.cfg.Location).Format("2006-01-02")
	}
	limit := tq.limit
	if limit <= 0 {
		limit = deviceTimelineLimit
	}
	src := timeline.Sources{Changes: s.inv, Traffic: s.flows, DNS: s.dns} // nil stays nil
	page, err := timeline.Read(ctx, id, src, timeline.Query{Since: v.From, Until: v.To, Limit: limit, Cursor: tq.cursor})
	if err != nil {
		return v, err
	}
	for _, it := range page.Items {
		v.Rows = append(v.Rows, timelineRowOf(it))
	}
	path := "/devices/" + url.PathEscape(id)
	v.NextURL, v.FirstURL = pageLinks(path, tq.params, page.NextCursor, tq.cursor)
	for _, u := range []*string{&v.NextURL, &v.FirstURL} {
		if *u != "" {
			*u += "#h-timeline"
		}
	}
	v.ClearURL = path + "#h-timeline"
	return v, nil
}

// timelineRowOf says an entry as the page shows it: an hour of traffic
// as "↓ 1.2 MB ↑ 300.0 kB, 40 flows", an hour of lookups as "312
// lookups, 3 blocked: a.example, b.example".
func timelineRowOf(it timeline.Item) timelineRow {
	row := timelineRow{Time: it.Time, Kind: it.Kind, Summary: it.Summary, By: it.Source, Class: "change"}
	if it.Actor != "" && it.Actor != it.Source {
		row.By += " (" + it.Actor + ")"
	}
	switch d := it.Data.(type) {
	case traffic.Totals:
		row.Class = "traffic"
		row.Summary = "↓ " + fmtBytes(d.BytesIn) + " ↑ " + fmtBytes(d.BytesOut) + ", " + plural(int(d.FlowsIn+d.FlowsOut), "flow", "flows")
	case timeline.DNSHour:
		row.Class = "dns"
		row.Summary = plural(int(d.Lookups), "lookup", "lookups")
		if d.Blocked > 0 {
			row.Summary += ", " + strconv.FormatUint(d.Blocked, 10) + " blocked"
		}
		if len(d.Domains) > 0 {
			row.Summary += ": " + strings.Join(d.Domains, ", ")
			if more := d.DistinctDomains - len(d.Domains); more > 0 {
				row.Summary += " and " + plural(more, "other domain", "other domains")
			}
		}
	}
	return row
}
