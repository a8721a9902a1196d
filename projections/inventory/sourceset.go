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

// bySource is one source's value.
type bySource[V any] struct {
	Src string
	Val V
}

// sourceSet is a device's values by source, sorted by source, one a
// source.
type sourceSet[V any] []bySource[V]

// nameSet is a device's names by source; seenSet each source's last
// sighting of it.
type (
	nameSet = sourceSet[nameRec]
	seenSet = sourceSet[time.Time]
)

// find returns where src is, or where it goes. A set has one to a few
// entries: a scan costs less than a binary search's comparisons.
func (s sourceSet[V]) find(src string) (int, bool) {
	for k := range s {
		if s[k].Src >= src {
			return k, s[k].Src == src
		}
	}
	return len(s), false
}

// get returns src's value.
func (s sourceSet[V]) get(src string) (V, bool) {
	if k, ok := s.find(src); ok {
		return s[k].Val, true
	}
	var zero V
	return zero, false
}

// value returns src's value, the zero value when it has none.
func (s sourceSet[V]) value(src string) V {
	v, _ := s.get(src)
	return v
}

// set makes v src's value.
func (s *sourceSet[V]) set(src string, v V) {
	k, ok := s.find(src)
	if ok {
		(*s)[k].Val = v
		return
	}
	*s = slices.Insert(*s, k, bySource[V]{Src: src, Val: v})
}

// MarshalJSON writes the set as the object {"<source>": value}.
func (s sourceSet[V]) MarshalJSON() ([]byte, error) {
	m := make(map[string]V, len(s))
	for _, e := range s {
		m[e.Src] = e.Val
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes (a key given twice:
// the last one, as for a map).
func (s *sourceSet[V]) UnmarshalJSON(b []byte) error {
	var m map[string]V
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = nil
	if len(m) == 0 {
		return nil
	}
	out := make(sourceSet[V], 0, len(m))
	for src, v := range m {
		out = append(out, bySource[V]{Src: src, Val: v})
	}
	slices.SortFunc(out, func(a, b bySource[V]) int { return strings.Compare(a.Src, b.Src) })
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

// device interns d's repeated strings, and points the strings that
// repeat another of d's at it (decoded from the row, each is a copy): a
// MAC-keyed device's MAC at its key's, its best name at the name it was
// picked from (about 40 bytes a device).
func (in *interner) device(d *device) {
	d.MAC = keyMAC(d.Key, d.MAC)
	for k := range d.Names {
		if d.Names[k].Val.Name == d.BestName {
			d.BestName = d.Names[k].Val.Name
			break
		}
	}
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
	if u := d.Evidence.user; u != nil {
		for _, ev := range [...]*evid{&u.Label, &u.Group, &u.Type, &u.Notes, &u.Ignored, &u.Watched} {
			in.str(&ev.Source)
			in.str(&ev.Actor)
		}
	}
	if a := d.Attached; a != nil {
		in.str(&a.Source)
	}
}
