package ui

import (
	"slices"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/projections"
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
