package events

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Names are a host's names by resolver, sorted by resolver, one name a
// resolver. In JSON they are an object from resolver to name, byte for
// byte what encoding/json writes for a map[string]string (keys sorted),
// so payloads written when this was a map decode and encode unchanged.
// A slice, not a map: a sweep decodes a host's names without allocating
// a map (most hosts have one or two).
type Names []Name

// Name is one resolver's name for a host.
type Name struct {
	Source string // dns, mdns, netbios, dnssd, ssdp
	Name   string
}

// NamesOf makes Names of a map (nil for nil, empty for empty).
func NamesOf(m map[string]string) Names {
	if m == nil {
		return nil
	}
	ns := make(Names, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ns = append(ns, Name{Source: k, Name: m[k]})
	}
	return ns
}

// Get is the name the resolver src gave.
func (ns Names) Get(src string) (string, bool) {
	for _, n := range ns {
		if n.Source == src {
			return n.Name, true
		}
	}
	return "", false
}

// Map is ns as a map (nil for nil).
func (ns Names) Map() map[string]string {
	if ns == nil {
		return nil
	}
	m := make(map[string]string, len(ns))
	for _, n := range ns {
		m[n.Source] = n.Name
	}
	return m
}

// Set sets the resolver src's name, keeping ns sorted.
func (ns *Names) Set(src, name string) {
	i, found := slices.BinarySearchFunc(*ns, src, func(n Name, s string) int { return strings.Compare(n.Source, s) })
	if found {
		(*ns)[i].Name = name
		return
	}
	*ns = slices.Insert(*ns, i, Name{Source: src, Name: name})
}

// MarshalJSON writes ns as an object, as encoding/json writes a map.
func (ns Names) MarshalJSON() ([]byte, error) {
	if ns == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range ns {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(n.Source)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(n.Name)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object as encoding/json reads it into a map: a
// repeated resolver keeps its last name, names already in ns are kept
// unless named again (as a map is merged into, which a repeated "names"
// key does), and null makes ns nil.
func (ns *Names) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil || *ns == nil {
		*ns = NamesOf(m)
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ns.Set(k, m[k])
	}
	return nil
}
