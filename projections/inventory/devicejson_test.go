package inventory

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// fuzzDevice builds a device from fuzz inputs, with every field set or
// left zero depending on bits of mask.
func fuzzDevice(s1, s2 string, sec, nsec int64, port uint16, mask uint32) *device {
	bit := func(n int) bool { return mask&(1<<n) != 0 }
	at := time.Unix(sec, nsec).UTC()
	if bit(20) {
		at = at.In(time.FixedZone("x", int(nsec%(30*3600))))
	}
	d := &device{ID: s1, Key: "m/" + s2, Presence: s2, FirstSeen: at, LastSeen: at.Add(time.Duration(nsec))}
	if bit(0) {
		d.MAC = s2
	}
	if bit(1) {
		d.Names = namesOf(map[string]nameRec{s1: {Name: s2, LastConfirmed: at}, s2: {Name: s1}, "dns": {Name: "<&>"}})
	}
	if bit(2) {
		d.Names = nameSet{}
	}
	if bit(3) {
		d.BestName = s1 + s2
	}
	if bit(4) {
		d.Label, d.Type = &s1, &s2
	}
	if bit(5) {
		d.Group, d.Notes = &s2, &s1
	}
	d.Ignored, d.Watched, d.Overdue = bit(6), bit(7), bit(8)
	switch {
	case bit(9):
		d.Addrs = []*addrRec{}
	case bit(10):
		rt := at.Add(time.Hour)
		d.Addrs = []*addrRec{{IP: s1, Network: s2, FirstSeen: at, LastSeen: at}, {IP: s2, FirstSeen: at, RetiredAt: &rt}}
	case bit(11):
		d.Addrs = []*addrRec{nil}
	}
	if bit(12) {
		d.Ports = []portRec{{Port: port, FirstSeen: at, LastSeen: at}, {Port: 0}}
	}
	if bit(13) {
		d.Services = []projections.Service{{Instance: s1, Type: s2, Port: port}}
	}
	if bit(14) {
		d.UPnP = &upnpRec{FriendlyName: s1, ModelName: s2}
	}
	if bit(15) {
		d.UPnP = &upnpRec{}
	}
	if bit(16) {
		d.Sources = []string{s1, s2}
	}
	if bit(23) {
		d.SeenBy = seenOf(map[string]time.Time{s1: at, s2 + "x": at.Add(time.Duration(nsec))})
	}
	if bit(24) {
		d.Attached = &attachRec{Source: s1, DeviceID: s2, Peer: s1, Port: s2, SSID: s1, Band: s2, Signal: -int(port % 100), Behind: int(port)}
	}
	if bit(25) {
		d.Attached = &attachRec{}
	}
	if bit(17) {
		d.Evidence.Name = srcEvidOf(s1, at)
		d.Evidence.edits().Watched = evid{Source: s2, Actor: s1, Time: at}
	}
	if bit(19) {
		e, u := &d.Evidence, d.Evidence.edits()
		for k, ev := range []*srcEvid{&e.Name, &e.MAC, &e.Addresses, &e.LastSeen, &e.Presence, &e.Ports, &e.Services, &e.UPnP} {
			*ev = srcEvidOf(fmt.Sprint(s1, k), at.Add(time.Duration(k)))
		}
		for k, ev := range []*evid{&u.Label, &u.Group, &u.Type, &u.Notes, &u.Ignored, &u.Watched} {
			*ev = evid{Source: fmt.Sprint(s1, k+8), Time: at.Add(time.Duration(k + 8))}
		}
	}
	if bit(18) {
		d.Evidence.MAC = srcEvidOf("", at)
		d.Evidence.edits().Label = evid{Actor: s1}
		d.Evidence.UPnP = srcEvidOf("", time.Time{}.Local())
	}
	return d
}

// checkDeviceRow fails unless encodeDeviceRow(d) is json.Marshal(d).
func checkDeviceRow(t *testing.T, d *device) {
	t.Helper()
	want, werr := json.Marshal(d)
	got, err := encodeDeviceRow(d, []byte("prefix"))
	if (err == nil) != (werr == nil) {
		t.Fatalf("encodeDeviceRow error %v, json.Marshal error %v", err, werr)
	}
	if err == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("encodeDeviceRow:\n got %s\nwant prefix%s", got, want)
	}
}

func TestDeviceRowIsMarshal(t *testing.T) {
	for _, c := range []struct {
		name   string
		s1, s2 string
		sec    int64
		mask   uint32
	}{
		{"zero", "", "", 0, 0},
		{"everything", "d1", "online", 1_700_000_000, 1<<20 - 1 - 1<<2 - 1<<9 - 1<<11 - 1<<15},
		{"empty names and addresses", "d1", "x", 1_700_000_000, 1<<2 | 1<<9 | 1<<15},
		{"nil address", "d1", "x", 1_700_000_000, 1 << 11},
		{"escapes", "a<b>&\"\\\n\x01\xff\u2028", "é\u2029", 1_700_000_000, 1<<20 - 1},
		{"offset zone", "d1", "x", 1_700_000_000, 1<<20 | 1<<17},
		{"year 10000", "d1", "x", 253402300800, 1<<17 | 1<<1},
		{"year -1", "d1", "x", -62167219201, 0},
		{"seen by and attached", "d1", "x", 1_700_000_000, 1<<23 | 1<<24},
		{"seen by in a zone", "d1", "x", 1_700_000_000, 1<<20 | 1<<23 | 1<<25},
		{"seen by year 10000", "d1", "x", 253402300800, 1 << 23},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkDeviceRow(t, fuzzDevice(c.s1, c.s2, c.sec, 123456789, 8080, c.mask))
		})
	}
}

// TestDeviceRowsOfScenarios: every device the sweep scenarios leave
// behind encodes as json.Marshal does.
func TestDeviceRowsOfScenarios(t *testing.T) {
	h := newHarness(t, Options{})
	h.sweep(sweepAt(t0, host("10.0.0.5", macTV, "dns=tv.lab", "mdns=TV"), host("10.0.0.6", "")))
	h.edit(h.device("10.0.0.5").ID, "alice", events.DeviceEdited{Label: ptr("Kitchen <TV>"), Ignored: ptr(true)}, t0.Add(time.Minute))
	h.watch(h.device("10.0.0.5").ID, "alice", true, t0.Add(2*time.Minute))
	h.sweep(sweepAt(t0.Add(7*time.Hour), host("10.0.0.9", macTV)))
	h.tick(t0.Add(8 * time.Hour))
	if len(h.inv.devs) != 2 {
		t.Fatalf("%d devices", len(h.inv.devs))
	}
	for _, d := range h.inv.devs {
		checkDeviceRow(t, d)
	}
}

// FuzzDeviceRow keeps encodeDeviceRow equal to json.Marshal.
func FuzzDeviceRow(f *testing.F) {
	f.Add("d1", "online", int64(1_700_000_000), int64(5), uint16(22), uint32(1<<20-1))
	f.Add("<&>\u2028\xff", "\"\\\n", int64(-62135596800), int64(-1), uint16(0), uint32(0))
	f.Add("a", "b", int64(253402300799), int64(999999999), uint16(65535), uint32(1<<21-1))
	f.Fuzz(func(t *testing.T, s1, s2 string, sec, nsec int64, port uint16, mask uint32) {
		checkDeviceRow(t, fuzzDevice(s1, s2, sec, nsec, port, mask))
	})
}
