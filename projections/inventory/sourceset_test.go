package inventory

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// namesOf builds the set a map of names by source gives.
func namesOf(m map[string]nameRec) nameSet {
	var s nameSet
	for src, r := range m {
		s.set(src, r)
	}
	return s
}

// seenOf builds the set a map of sightings by source gives.
func seenOf(m map[string]time.Time) seenSet {
	var s seenSet
	for src, t := range m {
		s.set(src, t)
	}
	return s
}

func TestSourceSetsKeepTheMapsForm(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 5, time.UTC)
	names := map[string]nameRec{"ssdp": {Name: "TV"}, "dns": {Name: "tv.lab", LastConfirmed: at}, "mdns": {Name: "tv.local"}}
	seen := map[string]time.Time{"sweep:lan": at, "router:gw": at.Add(time.Minute), "arp": at.Add(-time.Hour)}
	for name, c := range map[string]struct {
		set, m any
		empty  func() any
	}{
		"names":   {set: namesOf(names), m: names, empty: func() any { return new(nameSet) }},
		"seen_by": {set: seenOf(seen), m: seen, empty: func() any { return new(seenSet) }},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(c.set)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(c.m)
			if string(got) != string(want) {
				t.Fatalf("JSON of the set %s, of the map %s", got, want)
			}
			back := c.empty()
			if err := json.Unmarshal(want, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(reflect.ValueOf(back).Elem().Interface(), c.set) {
				t.Fatalf("decoded %#v, want %#v", back, c.set)
			}
		})
	}
}

func TestNameSetSortedAndReplaced(t *testing.T) {
	var s nameSet
	for _, src := range []string{"ssdp", "dns", "netbios", "dns", "arp"} {
		s.set(src, nameRec{Name: src + "-name"})
	}
	s.set("dns", nameRec{Name: "renamed"})
	var srcs []string
	for _, e := range s {
		srcs = append(srcs, e.Src)
	}
	if want := []string{"arp", "dns", "netbios", "ssdp"}; !reflect.DeepEqual(srcs, want) {
		t.Fatalf("sources %v, want %v", srcs, want)
	}
	if r, ok := s.get("dns"); !ok || r.Name != "renamed" {
		t.Fatalf("dns = %+v, %v", r, ok)
	}
	if _, ok := s.get("mdns"); ok {
		t.Fatal("mdns found in a set without it")
	}
	var seen seenSet
	if !seen.value("x").IsZero() {
		t.Fatal("an empty set has a sighting")
	}
	// A duplicated key decodes as a map's: the last one.
	if err := json.Unmarshal([]byte(`{"dns":{"name":"a"},"dns":{"name":"b"}}`), &s); err != nil || len(s) != 1 || s[0].Val.Name != "b" {
		t.Fatalf("duplicate key: %+v, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`null`), &s); err != nil || s != nil {
		t.Fatalf("null: %+v, %v", s, err)
	}
}

// A loaded device's MAC is its key's (m/<mac>) bytes and its best name
// the bytes of the name it was picked from; a new device's MAC its key's.
func TestLoadedDeviceSharesStrings(t *testing.T) {
	h := newHarness(t, Options{})
	h.sweep(sweepAt(t0, host("10.0.0.7", "00:11:22:00:00:07", "dns=nas.lab")))
	same := func(a, b string) bool { return len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b) }
	for name, inv := range map[string]*Inventory{"applied": h.inv, "loaded": h.load()} {
		d := inv.byKey["m/00:11:22:00:00:07"]
		if d == nil {
			t.Fatalf("%s: no device", name)
		}
		if !same(d.MAC, d.Key[2:]) {
			t.Errorf("%s: the MAC is a copy of the key's", name)
		}
		if name == "loaded" && (len(d.Names) != 1 || d.BestName != "nas.lab" || !same(d.BestName, d.Names[0].Val.Name)) {
			t.Errorf("%s: best name %q is a copy of the name's", name, d.BestName)
		}
	}
}
