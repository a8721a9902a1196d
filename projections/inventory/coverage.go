package inventory

import (
	"time"

	"github.com/jocasta/jocasta/projections"
)

// CoverageNotCovered is the state of Device.Coverage.
const CoverageNotCovered = "not_covered"

// sourceHealth is what the inventory knows of one source's runs: the
// rule "no data is not offline" reads it.
type sourceHealth struct {
	// Kind is the source kind ("sweep", "routerapi", ...).
	Kind string `json:"kind"`
	// LastComplete is the start of its newest complete run.
	LastComplete time.Time `json:"last_complete,omitzero"`
	// FailingSince is the end of its first failed or incomplete run since
	// the last complete one; nil while it works. Reason is the last
	// failure's.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	Reason       string     `json:"reason,omitempty"`
}

// sourceDone records a complete run of src that started at start.
func (i *Inventory) sourceDone(src, kind string, start time.Time) {
	h := i.health[src]
	if h == nil {
		h = &sourceHealth{}
		i.health[src] = h
	}
	wasFailing := h.FailingSince != nil
	if wasFailing {
		i.sourceChanges = append(i.sourceChanges, sourceChange{kind: projections.ChangeSourceRecovered, source: src,
			summary: src + " works again", old: h.Reason})
	}
	h.Kind = kind
	if start.After(h.LastComplete) {
		h.LastComplete = start
	}
	h.FailingSince, h.Reason = nil, ""
	i.metaDirty = true
	if wasFailing {
		i.refreshOverdue()
	}
}

// sourceFailing records a failed or incomplete run of src that ended at
// at, with its reason.
func (i *Inventory) sourceFailing(src, kind string, at time.Time, reason string) {
	h := i.health[src]
	if h == nil {
		h = &sourceHealth{}
		i.health[src] = h
	}
	if kind != "" {
		h.Kind = kind
	}
	changed := h.FailingSince == nil || h.Reason != reason
	if h.FailingSince == nil {
		i.sourceChanges = append(i.sourceChanges, sourceChange{kind: projections.ChangeSourceFailing, source: src,
			summary: src + " is failing: " + reason, new: reason})
		t := at
		h.FailingSince = &t
	}
	h.Reason = reason
	i.metaDirty = true
	if changed {
		i.refreshOverdue()
	}
}

// sourceChange is a source's move between working and failing, to be
// written to the change log once the event is applied.
type sourceChange struct {
	kind, source, summary string
	old, new              string
}

// emitSourceChanges writes the source moves the event caused (their
// device is none).
func (i *Inventory) emitSourceChanges(em *emitter) error {
	for _, c := range i.sourceChanges {
		var data *projections.OldNew
		if c.old != "" || c.new != "" {
			data = &projections.OldNew{Old: emptyNil(c.old), New: emptyNil(c.new)}
		}
		if err := em.emit(c.kind, "", c.summary, data); err != nil {
			return err
		}
	}
	i.sourceChanges = i.sourceChanges[:0]
	return nil
}

// recentSources lists, sorted, the sources that saw d within the online
// window before its last sighting: the ones whose silence can say it is
// gone.
func (i *Inventory) recentSources(d *device) []string {
	cut := d.LastSeen.Add(-i.opts.OnlineWindow)
	var out []string
	for _, e := range d.SeenBy {
		if !e.Val.Before(cut) {
			out = append(out, e.Src)
		}
	}
	return out
}

// hasEvidence reports whether a source that saw d lately has since
// completed a run without seeing it: the only evidence that a device is
// gone. For a sweep that is a complete sweep of a network holding one of
// d's current addresses, started after d was last seen; for a plugin
// source, a complete read started after it. A failed or incomplete run
// is no evidence, and neither is a source that never saw d (a sweep does
// not answer for a phone only the access point sees). A device recorded
// before sources were kept per sighting falls back to the sweeps.
func (i *Inventory) hasEvidence(d *device) bool {
	recent := i.recentSources(d)
	if len(recent) == 0 {
		return i.sweepEvidence(d)
	}
	for _, src := range recent {
		h := i.health[src]
		switch {
		case h == nil:
		case h.Kind == "sweep":
			if i.sweepEvidence(d) {
				return true
			}
		case h.LastComplete.After(d.LastSeen):
			return true
		}
	}
	return false
}

// sweepEvidence reports whether a complete sweep that covers one of d's
// current addresses started after d was last seen. An address with no
// network is covered by any complete sweep.
func (i *Inventory) sweepEvidence(d *device) bool {
	for _, a := range d.Addrs {
		if a.RetiredAt != nil {
			continue
		}
		if a.Network == "" {
			if i.anyDone.After(d.LastSeen) {
				return true
			}
		}
		for _, m := range i.sweeps {
			if m.start.After(d.LastSeen) && m.prefix.Contains(a.ip) {
				return true
			}
		}
	}
	return false
}

// refreshCoverage sets d's coverage: while d is overdue (online, past the
// window, no evidence yet), the source that saw it last among those that
// could give evidence, failing ones first, and since when.
func (i *Inventory) refreshCoverage(d *device) {
	if !d.Overdue || d.Presence != presenceOnline {
		d.coverage = nil
		return
	}
	recent := i.recentSources(d)
	if len(recent) == 0 {
		if src := d.Evidence.LastSeen.source(); src != "" {
			recent = []string{src}
		}
	}
	if len(recent) == 0 {
		d.coverage = nil
		return
	}
	pick := ""
	for _, src := range recent {
		h := i.health[src]
		failing := h != nil && h.FailingSince != nil
		switch {
		case pick == "":
			pick = src
		case failing && (i.health[pick] == nil || i.health[pick].FailingSince == nil):
			pick = src
		case failing == (i.health[pick] != nil && i.health[pick].FailingSince != nil) && src == d.Evidence.LastSeen.source():
			pick = src
		}
	}
	c := &projections.Coverage{State: CoverageNotCovered, Source: pick, Since: d.SeenBy.value(pick)}
	if h := i.health[pick]; h != nil && h.FailingSince != nil {
		c.Since, c.Reason = *h.FailingSince, h.Reason
	}
	if c.Since.IsZero() {
		c.Since = d.LastSeen
	}
	// The devices a failing source saw last are made overdue together and
	// refreshed one after another, each with the same coverage (at 10,000
	// devices, 0.8 MB held as copies): one shared, never changed in place.
	if l := i.lastCoverage; l != nil && *l == *c {
		c = l
	}
	i.lastCoverage = c
	d.coverage = c
}

// refreshOverdue refreshes the coverage of every overdue device after a
// source's health changed.
func (i *Inventory) refreshOverdue() {
	for _, d := range i.overdue {
		i.refreshCoverage(d)
	}
}
