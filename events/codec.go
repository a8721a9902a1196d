package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// Upcaster turns a payload of version From into version From+1.
type Upcaster struct {
	From int
	Up   func(json.RawMessage) (json.RawMessage, error)
}

// KindSpec describes one kind: its current version, payload type and the
// upcasters from every older version.
type KindSpec struct {
	Kind    string
	Version int
	// Payload is a zero value of the payload type (not a pointer).
	Payload   any
	Upcasters []Upcaster
	// Summary is one line for docs/events.md and tools.
	Summary string
}

// Registry is a set of kinds. The process uses [Default]; tests may build
// their own.
type Registry struct {
	specs map[string]KindSpec
}

// NewRegistry builds a registry from specs; a duplicate kind or a gap in
// upcasters is an error.
func NewRegistry(specs ...KindSpec) (*Registry, error) {
	r := &Registry{specs: make(map[string]KindSpec, len(specs))}
	for _, s := range specs {
		if _, dup := r.specs[s.Kind]; dup {
			return nil, fmt.Errorf("events: kind %q registered twice", s.Kind)
		}
		if s.Version < 1 {
			return nil, fmt.Errorf("events: kind %q: version must be ≥ 1", s.Kind)
		}
		have := map[int]bool{}
		for _, u := range s.Upcasters {
			have[u.From] = true
		}
		for v := 1; v < s.Version; v++ {
			if !have[v] {
				return nil, fmt.Errorf("events: kind %q: no upcaster from v%d", s.Kind, v)
			}
		}
		r.specs[s.Kind] = s
	}
	return r, nil
}

// Lookup returns a kind's spec.
func (r *Registry) Lookup(kind string) (KindSpec, bool) {
	s, ok := r.specs[kind]
	return s, ok
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	out := make([]string, 0, len(r.specs))
	for k := range r.specs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Upcast returns the payload of e at the current version of its kind.
func (r *Registry) Upcast(e Envelope) (json.RawMessage, error) {
	s, ok := r.specs[e.Kind]
	if !ok {
		return nil, fmt.Errorf("events: seq %d kind %q: %w", e.Seq, e.Kind, ErrUnknownKind)
	}
	if e.V < 1 || e.V > s.Version {
		return nil, fmt.Errorf("events: seq %d %s v%d (this build knows v%d): %w", e.Seq, e.Kind, e.V, s.Version, ErrUnknownVersion)
	}
	p := e.Payload
	for v := e.V; v < s.Version; v++ {
		var up *Upcaster
		for i := range s.Upcasters {
			if s.Upcasters[i].From == v {
				up = &s.Upcasters[i]
			}
		}
		if up == nil {
			return nil, fmt.Errorf("events: seq %d %s v%d: %w", e.Seq, e.Kind, v, ErrUnknownVersion)
		}
		var err error
		if p, err = up.Up(p); err != nil {
			return nil, fmt.Errorf("events: seq %d: upcast %s v%d: %w", e.Seq, e.Kind, v, err)
		}
	}
	return p, nil
}

// Decode returns a pointer to the payload of e, upcast to the current
// version and decoded into the kind's payload type.
func (r *Registry) Decode(e Envelope) (any, error) {
	p, err := r.Upcast(e)
	if err != nil {
		return nil, err
	}
	s := r.specs[e.Kind]
	ptr := reflect.New(reflect.TypeOf(s.Payload))
	if fastDecode(p, ptr.Interface()) {
		return ptr.Interface(), nil
	}
	if err := json.Unmarshal(p, ptr.Interface()); err != nil {
		return nil, fmt.Errorf("events: seq %d: decode %s payload: %w", e.Seq, e.Kind, err)
	}
	return ptr.Interface(), nil
}

// DecodeInto upcasts e's payload and decodes it into dst, which must be a
// pointer to the kind's payload type.
func (r *Registry) DecodeInto(e Envelope, dst any) error {
	p, err := r.Upcast(e)
	if err != nil {
		return err
	}
	if fastDecode(p, dst) {
		return nil
	}
	if err := json.Unmarshal(p, dst); err != nil {
		return fmt.Errorf("events: seq %d: decode %s payload: %w", e.Seq, e.Kind, err)
	}
	return nil
}

// Default is the registry of every kind this build knows.
var Default = mustRegistry(Kinds()...)

func mustRegistry(specs ...KindSpec) *Registry {
	r, err := NewRegistry(specs...)
	if err != nil {
		panic(err) // a programming error in Kinds, caught by every test
	}
	return r
}

// Lookup finds a kind in Default.
func Lookup(kind string) (KindSpec, bool) { return Default.Lookup(kind) }

// Decode decodes e with Default.
func Decode(e Envelope) (any, error) { return Default.Decode(e) }

// DecodeInto decodes e's payload into dst with Default.
func DecodeInto(e Envelope, dst any) error { return Default.DecodeInto(e, dst) }
