package inventory

import (
	"hash/maphash"
	"testing"
	"time"
)

// Every history field moves the fingerprint; what the history does not
// keep (sighting times) and the order of names and addresses do not.
func TestFingerprintFollowsTheHistoryFields(t *testing.T) {
	h := &histState{seed: maphash.MakeSeed(), seeded: true}
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	base := func() *device {
		d := &device{ID: "d1", MAC: "00:11:22:33:44:55", vendor: "ACME", Presence: presenceOnline, FirstSeen: at,
			BestName: "printer.lan", Sources: []string{"sweep:lab"}, heapIdx: -1}
		d.Names.set("dns", nameRec{Name: "printer.lan", LastConfirmed: at})
		d.Names.set("mdns", nameRec{Name: "printer.local", LastConfirmed: at})
		d.Addrs = []*addrRec{{IP: "10.0.0.5", Network: "10.0.0.0/24", FirstSeen: at, LastSeen: at},
			{IP: "10.0.0.6", Network: "10.0.0.0/24", FirstSeen: at, LastSeen: at}}
		d.Ports = []portRec{{Port: 80}}
		return d
	}
	s := func(v string) *string { return &v }
	want := h.fingerprint(base())
	for name, change := range map[string]func(d *device){
		"name":           func(d *device) { d.BestName = "other.lan" },
		"mac":            func(d *device) { d.MAC = "00:11:22:33:44:56" },
		"vendor":         func(d *device) { d.vendor = "Other" },
		"label set":      func(d *device) { d.Label = s("") },
		"group":          func(d *device) { d.Group = s("lab") },
		"type":           func(d *device) { d.Type = s("printer") },
		"notes":          func(d *device) { d.Notes = s("n") },
		"label as group": func(d *device) { d.Label, d.Group = nil, s("") },
		"ignored":        func(d *device) { d.Ignored = true },
		"watched":        func(d *device) { d.Watched = true },
		"presence":       func(d *device) { d.Presence = presenceOffline },
		"first seen":     func(d *device) { d.FirstSeen = at.Add(time.Nanosecond) },
		"a name":         func(d *device) { d.Names.set("mdns", nameRec{Name: "other.local", LastConfirmed: at}) },
		"a name's source": func(d *device) {
			d.Names = nil
			d.Names.set("dns", nameRec{Name: "printer.lan"})
			d.Names.set("dnssd", nameRec{Name: "printer.local"})
		},
		"an address":    func(d *device) { d.Addrs[1].IP = "10.0.0.7" },
		"a network":     func(d *device) { d.Addrs[1].Network = "10.0.0.0/16" },
		"address first": func(d *device) { d.Addrs[0].FirstSeen = at.Add(time.Second) },
		"retired":       func(d *device) { r := at; d.Addrs[0].RetiredAt = &r },
		"one address":   func(d *device) { d.Addrs = d.Addrs[:1] },
		"ports":         func(d *device) { d.Ports = append(d.Ports, portRec{Port: 443}) },
		"sources":       func(d *device) { d.Sources = append(d.Sources, "routerapi:gw") },
		"a port as source": func(d *device) {
			d.Ports, d.Sources = nil, append(d.Sources, "\x00P")
		},
		"attached":      func(d *device) { d.Attached = &attachRec{Source: "routerapi:gw"} },
		"attached port": func(d *device) { d.Attached = &attachRec{Source: "routerapi:gw", Port: "ether2"} },
	} {
		d := base()
		change(d)
		if h.fingerprint(d) == want {
			t.Errorf("%s: the fingerprint did not move", name)
		}
	}
	for name, same := range map[string]func(d *device){
		"sightings": func(d *device) {
			d.LastSeen = at.Add(time.Hour)
			d.Addrs[0].LastSeen = at.Add(time.Hour)
			d.Names.set("dns", nameRec{Name: "printer.lan", LastConfirmed: at.Add(time.Hour)})
		},
		"addresses in another order": func(d *device) { d.Addrs[0], d.Addrs[1] = d.Addrs[1], d.Addrs[0] },
	} {
		d := base()
		same(d)
		if h.fingerprint(d) != want {
			t.Errorf("%s: the fingerprint moved", name)
		}
	}
}
