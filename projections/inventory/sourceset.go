package inventory

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// A device has one to a few names by source and is seen by one to a few
// sources. Both were maps; a map of one entry costs about 400 bytes and
// a random-start iteration, so they are slices sorted by source, with
// the maps' JSON form (an object keyed by source, keys sorted).

// nameEntry is one source's name for a device.
type nameEntry struct {
	Src string
	nameRec
}

// nameSet is a device's names by source, sorted by source, one entry a
// source.
type nameSet []nameEntry

func (s nameSet) find(src string) (int, bool) {
	return slices.BinarySearchFunc(s, src, func(e nameEntry, src string) int { return strings.Compare(e.Src, src) })
}

// get returns src's name.
func (s nameSet) get(src string) (nameRec, bool) {
	if k, ok := s.find(src); ok {
		return s[k].nameRec, true
	}
	return nameRec{}, false
}

// set makes r src's name.
func (s *nameSet) set(src string, r nameRec) {
	k, ok := s.find(src)
	if ok {
		(*s)[k].nameRec = r
		return
	}
	*s = slices.Insert(*s, k, nameEntry{Src: src, nameRec: r})
}

// MarshalJSON writes the set as the object {"<source>": {"name",
// "last_confirmed"}}.
func (s nameSet) MarshalJSON() ([]byte, error) {
	m := make(map[string]nameRec, len(s))
	for _, e := range s {
		m[e.Src] = e.nameRec
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes (a key given twice:
// the last one, as for a map).
func (s *nameSet) UnmarshalJSON(b []byte) error {
	var m map[string]nameRec
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = nil
	if len(m) == 0 {
		return nil
	}
	out := make(nameSet, 0, len(m))
	for src, r := range m {
		out = append(out, nameEntry{Src: src, nameRec: r})
	}
	slices.SortFunc(out, func(a, b nameEntry) int { return strings.Compare(a.Src, b.Src) })
	*s = out
	return nil
}

// seenEntry is one source's last sighting of a device.
type seenEntry struct {
	Src string
	At  time.Time
}

// seenSet is each source's last sighting of a device, sorted by source.
type seenSet []seenEntry

func (s seenSet) find(src string) (int, bool) {
	return slices.BinarySearchFunc(s, src, func(e seenEntry, src string) int { return strings.Compare(e.Src, src) })
}

// get returns src's last sighting (zero when none).
func (s seenSet) get(src string) time.Time {
	if k, ok := s.find(src); ok {
		return s[k].At
	}
	return time.Time{}
}

// set makes at src's last sighting.
func (s *seenSet) set(src string, at time.Time) {
	k, ok := s.find(src)
	if ok {
		(*s)[k].At = at
		return
	}
	*s = slices.Insert(*s, k, seenEntry{Src: src, At: at})
}

// MarshalJSON writes the set as the object {"<source>": time}.
func (s seenSet) MarshalJSON() ([]byte, error) {
	m := make(map[string]time.Time, len(s))
	for _, e := range s {
		m[e.Src] = e.At
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes.
func (s *seenSet) UnmarshalJSON(b []byte) error {
	var m map[string]time.Time
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = nil
	if len(m) == 0 {
		return nil
	}
	out := make(seenSet, 0, len(m))
	for src, t := range m {
		out = append(out, seenEntry{Src: src, At: t})
	}
	slices.SortFunc(out, func(a, b seenEntry) int { return strings.Compare(a.Src, b.Src) })
	*s = out
	return nil
}

// interner shares the strings that many devices repeat (source names,
// presence, networks) while devices are loaded: decoded from their rows
// each would be its own copy, eight or more a device.
type interner map[string]string

func (in *interner) str(s *string) {
	if *s == "" {
		return
	}
	if *in == nil {
		*in = make(map[string]string)
	}
	if v, ok := (*in)[*s]; ok {
		*s = v
		return
	}
	(*in)[*s] = *s
}

// device interns d's repeated strings.
func (in *interner) device(d *device) {
	in.str(&d.Presence)
	for k := range d.Sources {
		in.str(&d.Sources[k])
	}
	for k := range d.Names {
		in.str(&d.Names[k].Src)
	}
	for k := range d.SeenBy {
		in.str(&d.SeenBy[k].Src)
	}
	for _, a := range d.Addrs {
		if a != nil {
			in.str(&a.Network)
		}
	}
	e := &d.Evidence
	for _, ev := range [...]*evid{&e.Name, &e.MAC, &e.Addresses, &e.LastSeen, &e.Presence, &e.Ports, &e.Services, &e.UPnP} {
		in.str(&ev.Source)
	}
	if u := e.user; u != nil {
		for _, ev := range [...]*evid{&u.Label, &u.Group, &u.Type, &u.Notes, &u.Ignored, &u.Watched} {
			in.str(&ev.Source)
			in.str(&ev.Actor)
		}
	}
	if a := d.Attached; a != nil {
		in.str(&a.Source)
	}
}
