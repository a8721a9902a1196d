package inventory

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// applyEdit folds a user's device.edited into the device named by the
// event's Device. Each field that really changes gets its own
// device.edited entry with the old and new value; a cleared field
// becomes null (ignored becomes false). An event for a device that no
// longer exists is skipped.
func (i *Inventory) applyEdit(em *emitter, p *events.DeviceEdited) error {
	d := i.devs[em.ev.Device]
	if d == nil {
		return nil
	}
	who := em.actor()
	ev := evid{Source: em.ev.Source, Actor: who, Time: em.ev.Time.UTC()}
	name := d.name()
	strField := func(field string, cur **string, set *string, e *evid) error {
		next := *cur
		if set != nil {
			v := *set
			next = &v
		}
		if slices.Contains(p.Cleared, field) {
			next = nil
		}
		if eqPtr(*cur, next) {
			return nil
		}
		old := *cur
		*cur = next
		*e = ev
		var summary string
		switch {
		case next == nil:
			summary = fmt.Sprintf("%s cleared the %s of %s (was %s)", who, field, name, quoteText(*old))
		case old == nil:
			summary = fmt.Sprintf("%s set the %s of %s to %s", who, field, name, quoteText(*next))
		default:
			summary = fmt.Sprintf("%s changed the %s of %s from %s to %s", who, field, name, quoteText(deref(old)), quoteText(*next))
		}
		return em.emit(projections.ChangeEdited, d.ID, summary, &projections.OldNew{Old: strAny(old), New: strAny(next)})
	}
	changed := false
	for _, f := range []struct {
		name string
		cur  **string
		set  *string
		e    *evid
	}{
		{"label", &d.Label, p.Label, &d.Evidence.edits().Label},
		{"group", &d.Group, p.Group, &d.Evidence.edits().Group},
		{"type", &d.Type, p.Type, &d.Evidence.edits().Type},
		{"notes", &d.Notes, p.Notes, &d.Evidence.edits().Notes},
	} {
		before := *f.cur
		if err := strField(f.name, f.cur, f.set, f.e); err != nil {
			return err
		}
		if !eqPtr(before, *f.cur) {
			changed = true
		}
	}
	ign := d.Ignored
	if p.Ignored != nil {
		ign = *p.Ignored
	}
	if slices.Contains(p.Cleared, "ignored") {
		ign = false
	}
	if ign != d.Ignored {
		d.Ignored = ign
		d.Evidence.edits().Ignored = ev
		changed = true
		verb := "marked %s as ignored"
		if !ign {
			verb = "marked %s as not ignored"
		}
		if err := em.emit(projections.ChangeEdited, d.ID, who+" "+fmt.Sprintf(verb, name),
			&projections.OldNew{Old: !ign, New: ign}); err != nil {
			return err
		}
	}
	if changed {
		d.refreshDerived(i.opts.Vendor)
		i.markDirty(d)
	}
	return nil
}

// applyWatch folds a device.watch_set. Presence follows: a device past
// the window is quiet while watched and offline otherwise (no separate
// presence entry: the watch entry says it).
func (i *Inventory) applyWatch(em *emitter, p *events.DeviceWatchSet) error {
	d := i.devs[em.ev.Device]
	if d == nil || d.Watched == p.Watched {
		return nil
	}
	d.Watched = p.Watched
	d.Evidence.edits().Watched = evid{Source: em.ev.Source, Actor: em.actor(), Time: em.ev.Time.UTC()}
	if d.Presence != presenceOnline {
		d.Presence = absentFor(d)
	}
	i.markDirty(d)
	kind, verb := projections.ChangeWatchStarted, "started watching"
	if !p.Watched {
		kind, verb = projections.ChangeWatchStopped, "stopped watching"
	}
	return em.emit(kind, d.ID, fmt.Sprintf("%s %s %s", em.actor(), verb, d.display()),
		&projections.OldNew{Old: !p.Watched, New: p.Watched})
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// maxQuoted is how many characters of a text an edit's summary quotes.
const maxQuoted = 60

// quoteText quotes a user's text for a change's one-sentence summary, as
// a person reads it: line breaks, tabs and other control characters
// become spaces, runs of spaces one, and a text longer than maxQuoted
// characters ends in "…" (the whole value is in the entry's data).
func quoteText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	n, space := 0, false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if n == maxQuoted {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
			if n++; n == maxQuoted {
				b.WriteString("…")
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	b.WriteByte('"')
	return b.String()
}
