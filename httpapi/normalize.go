package httpapi

import (
	"slices"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// The API promises arrays and objects, never null, for collections, and
// times in UTC ending in Z. These helpers make the view values keep that
// promise whatever the projection returned, without changing the caller's
// values (slices are copied before they are changed).

func needsUTC(t time.Time) bool {
	_, off := t.Zone()
	return off != 0
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil || !needsUTC(*t) {
		return t
	}
	u := t.UTC()
	return &u
}

// fixSlice returns s, or an empty slice for nil, or a fixed copy when some
// element needs fixing.
func fixSlice[T any](s []T, needs func(*T) bool, fix func(*T)) []T {
	if s == nil {
		return []T{}
	}
	for i := range s {
		if needs(&s[i]) {
			c := slices.Clone(s)
			for j := range c {
				fix(&c[j])
			}
			return c
		}
	}
	return s
}

func fixMap[K comparable, V any](m map[K]V, needs func(V) bool, fix func(V) V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	for _, v := range m {
		if needs(v) {
			c := make(map[K]V, len(m))
			for k, v := range m {
				c[k] = fix(v)
			}
			return c
		}
	}
	return m
}

func never[T any](*T) bool { return false }
func nop[T any](*T)        {}

func deviceOut(d projections.Device) projections.Device {
	d.FirstSeen, d.LastSeen = d.FirstSeen.UTC(), d.LastSeen.UTC()
	d.Names = fixMap(d.Names,
		func(n projections.Name) bool { return needsUTC(n.LastConfirmed) },
		func(n projections.Name) projections.Name { n.LastConfirmed = n.LastConfirmed.UTC(); return n })
	d.Evidence = fixMap(d.Evidence,
		func(e projections.Evidence) bool { return needsUTC(e.Time) },
		func(e projections.Evidence) projections.Evidence { e.Time = e.Time.UTC(); return e })
	d.Addresses = fixSlice(d.Addresses,
		func(a *projections.Address) bool {
			return needsUTC(a.FirstSeen) || needsUTC(a.LastSeen) || (a.RetiredAt != nil && needsUTC(*a.RetiredAt))
		},
		func(a *projections.Address) {
			a.FirstSeen, a.LastSeen, a.RetiredAt = a.FirstSeen.UTC(), a.LastSeen.UTC(), utcPtr(a.RetiredAt)
		})
	d.Ports = fixSlice(d.Ports,
		func(p *projections.Port) bool { return needsUTC(p.FirstSeen) || needsUTC(p.LastSeen) },
		func(p *projections.Port) { p.FirstSeen, p.LastSeen = p.FirstSeen.UTC(), p.LastSeen.UTC() })
	d.Services = fixSlice(d.Services, never[projections.Service], nop[projections.Service])
	d.Sources = fixSlice(d.Sources, never[string], nop[string])
	return d
}

func entryOut(e projections.ChangeEntry) projections.ChangeEntry {
	e.Time = e.Time.UTC()
	return e
}

func scanOut(s projections.Scan) projections.Scan {
	s.Started, s.Finished = s.Started.UTC(), s.Finished.UTC()
	s.Networks = fixSlice(s.Networks, never[string], nop[string])
	s.Errors = fixSlice(s.Errors, never[string], nop[string])
	return s
}

func statsOut(s projections.Stats) projections.Stats {
	same := func(int) bool { return false }
	id := func(n int) int { return n }
	s.ByPresence = fixMap(s.ByPresence, same, id)
	s.ByGroup = fixMap(s.ByGroup, same, id)
	s.ByNetwork = fixMap(s.ByNetwork, same, id)
	s.BySource = fixMap(s.BySource, same, id)
	if s.NewestDevice != nil {
		d := deviceOut(*s.NewestDevice)
		s.NewestDevice = &d
	}
	return s
}

// pageOut applies out to every item of p into a new slice.
func pageOut[T any](p projections.Page[T], out func(T) T) projections.Page[T] {
	items := make([]T, len(p.Items))
	for i, it := range p.Items {
		items[i] = out(it)
	}
	return projections.Page[T]{Items: items, NextCursor: p.NextCursor}
}
