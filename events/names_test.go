package events

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// hostWithMap is SweepHost as it was when Names was a map: the JSON of
// both must be the same bytes, both ways.
type hostWithMap struct {
	IP    string            `json:"ip"`
	Names map[string]string `json:"names,omitempty"`
}

type hostWithNames struct {
	IP    string `json:"ip"`
	Names Names  `json:"names,omitempty"`
}

func TestNamesJSONIsTheMapsJSON(t *testing.T) {
	for _, m := range []map[string]string{
		nil,
		{},
		{"dns": "printer.lan"},
		{"mdns": "b.local", "dns": "a.lan", "netbios": "C", "ssdp": "Kitchen <TV> & co", "dnssd": "Ünïcode \"quoted\" \\ \u2028"},
		{"": "empty resolver", "x": ""},
	} {
		checkNamesJSON(t, m)
	}
}

func checkNamesJSON(t *testing.T, m map[string]string) {
	t.Helper()
	want, err := json.Marshal(hostWithMap{IP: "10.0.0.1", Names: m})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(hostWithNames{IP: "10.0.0.1", Names: NamesOf(m)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("Names of %q encode as %s, the map as %s", m, got, want)
	}
	var back hostWithNames
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	var mapBack hostWithMap
	if err := json.Unmarshal(want, &mapBack); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Names, NamesOf(mapBack.Names)) || !reflect.DeepEqual(back.Names.Map(), mapBack.Names) {
		t.Fatalf("%s decodes as %#v, the map as %#v", want, back.Names, mapBack.Names)
	}
}

// A repeated resolver keeps its last name and null leaves no names, as
// for a map.
func TestNamesDecodeAsAMap(t *testing.T) {
	for in, want := range map[string]Names{
		`{"ip":"x","names":{"dns":"a","mdns":"m","dns":"b"}}`: {{"dns", "b"}, {"mdns", "m"}},
		`{"ip":"x","names":null}`:                             nil,
		`{"ip":"x","names":{}}`:                               {},
		`{"ip":"x"}`:                                          nil,
		// A repeated "names" merges, as into a map.
		`{"ip":"x","names":{"dns":"a","mdns":"m"},"names":{"dns":"b","ssdp":"s"}}`: {{"dns", "b"}, {"mdns", "m"}, {"ssdp", "s"}},
		`{"ip":"x","names":{"dns":"a"},"names":null}`:                              nil,
	} {
		var h hostWithNames
		if err := json.Unmarshal([]byte(in), &h); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h.Names, want) {
			t.Errorf("%s: names %#v, want %#v", in, h.Names, want)
		}
		var m hostWithMap
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h.Names.Map(), m.Names) {
			t.Errorf("%s: names %v, the map %v", in, h.Names.Map(), m.Names)
		}
		if err := json.Unmarshal([]byte(`{"names":[]}`), &h); err == nil {
			t.Errorf("an array of names was accepted")
		}
	}
}

func TestNamesSetGet(t *testing.T) {
	var ns Names
	for _, kv := range [][2]string{{"ssdp", "s"}, {"dns", "d"}, {"mdns", "m"}, {"dns", "d2"}} {
		ns.Set(kv[0], kv[1])
	}
	if want := (Names{{"dns", "d2"}, {"mdns", "m"}, {"ssdp", "s"}}); !slices.Equal(ns, want) {
		t.Fatalf("names %v, want %v", ns, want)
	}
	if n, ok := ns.Get("mdns"); !ok || n != "m" {
		t.Errorf("Get(mdns) = %q, %v", n, ok)
	}
	if _, ok := ns.Get("netbios"); ok {
		t.Errorf("Get(netbios) found a name")
	}
}

// FuzzNamesJSON: any names encode as the map of the same names does.
func FuzzNamesJSON(f *testing.F) {
	f.Add("dns", "a.lan", "mdns", "<b>&")
	f.Add("", "", "\u2028", "\xff")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		checkNamesJSON(t, map[string]string{k1: v1, k2: v2})
	})
}
