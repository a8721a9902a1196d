package inventory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

const router = "routerapi:core"

// read applies one plugin.read of router; it returns its seq.
func (h *harness) read(p events.PluginRead) uint64 {
	h.t.Helper()
	if p.Kind == "" {
		p.Kind = "routerapi"
	}
	if p.Started.IsZero() {
		p.Started = p.Finished.Add(-time.Second)
	}
	p.Hosts = len(p.Set)
	h.applyEv(h.envelope(events.KindPluginRead, p, p.Finished, router, router, ""))
	return h.seq
}

func (h *harness) failed(at time.Time, reason string) {
	h.t.Helper()
	h.applyEv(h.envelope(events.KindScanFailed, events.ScanFailed{ScanID: "f", Kind: "routerapi", Started: at.Add(-10 * time.Second), Finished: at, Reason: reason},
		at, router, router, ""))
}

var corePeer = &events.ReadPeer{Name: "core", Model: "CCR2004", MACs: []string{"00:00:5e:00:53:01"}}

func whole(at time.Time, hosts ...events.ReadHost) events.PluginRead {
	return events.PluginRead{ScanID: "r", Finished: at, Complete: true, Peer: corePeer, Set: hosts}
}

func rhost(mac, ip string, seen bool, names ...string) events.ReadHost {
	h := events.ReadHost{MAC: mac, Seen: seen}
	if ip != "" {
		h.IPs = []string{ip}
	}
	for _, n := range names {
		src, name, _ := strings.Cut(n, "=")
		if h.Names == nil {
			h.Names = map[string]string{}
		}
		h.Names[src] = name
	}
	return h
}

func (h *harness) byMAC(mac string) projections.Device {
	h.t.Helper()
	for _, d := range h.devices(len(h.inv.devs)) {
		if d.MAC != nil && *d.MAC == mac {
			return d
		}
	}
	h.t.Fatalf("no device with MAC %s", mac)
	return projections.Device{}
}

// A MAC a router knows merges with the device the sweep found at that
// address, in either order, with the router's names beside the sweep's.
func TestReadIdentityEitherOrder(t *testing.T) {
	const mac = "00:00:5e:00:53:11"
	for _, routerFirst := range []bool{false, true} {
		h := newHarness(t, Options{})
		sweepIt := func(at time.Time) { h.sweep(sweepAt(at, host("10.0.0.50", "", "dns=printer.lan"))) } // off-link: no MAC
		readIt := func(at time.Time) {
			h.read(whole(at, rhost(mac, "10.0.0.50", true, "dhcp=printer", "router=Printer in the hall")))
		}
		if routerFirst {
			readIt(t0)
			sweepIt(t0.Add(time.Minute))
		} else {
			sweepIt(t0)
			readIt(t0.Add(time.Minute))
		}
		d := h.devices(1)[0]
		if d.MAC == nil || *d.MAC != mac || d.Names["dhcp"].Name != "printer" || d.Names["router"].Name != "Printer in the hall" ||
			d.Names["dns"].Name != "printer.lan" || d.Name != "printer.lan" || d.Presence != presenceOnline {
			t.Fatalf("router first %v: %s", routerFirst, js(d))
		}
		if !slices.Contains(d.Sources, router) || !slices.Contains(d.Sources, "sweep:lab") {
			t.Errorf("sources %v", d.Sources)
		}
		h.checkReload()
	}
}

// Hosts the router knows but did not see are devices, not online ones.
func TestReadKnownNotSeen(t *testing.T) {
	h := newHarness(t, Options{})
	h.read(whole(t0, rhost("00:00:5e:00:53:22", "10.0.0.20", false, "router=nas in the attic")))
	d := h.devices(1)[0]
	if d.Presence != presenceOffline || d.Name != "nas in the attic" || len(d.Addresses) != 1 {
		t.Fatalf("%s", js(d))
	}
	if got := kinds(h.entries()); !slices.Equal(got, []string{"device.discovered"}) {
		t.Errorf("entries %v", got)
	}
	// Seen later: online.
	h.read(whole(t0.Add(time.Minute), rhost("00:00:5e:00:53:22", "10.0.0.20", true, "router=nas in the attic")))
	if d := h.devices(1)[0]; d.Presence != presenceOnline {
		t.Fatalf("after a sighting: %s", d.Presence)
	}
}

// No data is not offline: a device only the router saw keeps its presence
// while the router fails, flagged as not covered; a complete read without
// it is evidence, and then it goes offline.
func TestReadCoverage(t *testing.T) {
	h := newHarness(t, Options{OnlineWindow: 15 * time.Minute})
	phone := rhost("3c:22:fb:00:00:01", "10.0.0.30", true, "dhcp=phone")
	pc := host("10.0.0.40", "00:11:22:00:00:40")
	h.sweep(sweepAt(t0, pc))
	h.read(whole(t0, phone))
	// The router fails from then on; the sweep keeps working and never
	// sees the phone (it does not answer ICMP).
	h.failed(t0.Add(5*time.Minute), "ip/arp: HTTP 401 Unauthorized")
	for m := 10; m <= 40; m += 10 {
		h.sweep(sweepAt(t0.Add(time.Duration(m)*time.Minute), pc))
		h.tick(t0.Add(time.Duration(m) * time.Minute))
	}
	d := h.byMAC("3c:22:fb:00:00:01")
	if d.Presence != presenceOnline {
		t.Fatalf("a device only a failing source saw went %s", d.Presence)
	}
	if d.Coverage == nil || d.Coverage.State != CoverageNotCovered || d.Coverage.Source != router ||
		!d.Coverage.Since.Equal(t0.Add(5*time.Minute)) || !strings.Contains(d.Coverage.Reason, "401") {
		t.Fatalf("coverage %s", js(d.Coverage))
	}
	if pcd := h.byMAC("00:11:22:00:00:40"); pcd.Coverage != nil {
		t.Errorf("the swept PC is flagged: %s", js(pcd.Coverage))
	}
	h.checkReload()
	// The router's failure is in the change log once, as a source's.
	var failing, recovered int
	for _, e := range h.entries() {
		switch e.Kind {
		case projections.ChangeSourceFailing:
			failing++
			if e.DeviceID != "" || e.Source != router || !strings.Contains(e.Summary, "401") {
				t.Errorf("source.failing entry %s", js(e))
			}
		case projections.ChangeSourceRecovered:
			recovered++
		}
	}
	if failing != 1 || recovered != 0 {
		t.Errorf("%d source.failing, %d source.recovered entries", failing, recovered)
	}
	// The router reads again, completely, without the phone: it is gone.
	h.read(whole(t0.Add(45*time.Minute), rhost("00:11:22:00:00:40", "10.0.0.40", true)))
	d = h.byMAC("3c:22:fb:00:00:01")
	if d.Presence != presenceOffline || d.Coverage != nil {
		t.Fatalf("after a complete read without it: %s coverage %s", d.Presence, js(d.Coverage))
	}
	if es := h.entries(); !slices.ContainsFunc(es, func(e projections.ChangeEntry) bool { return e.Kind == projections.ChangeSourceRecovered }) {
		t.Error("no source.recovered entry")
	}
	h.checkReload()
}

// A partial read is not evidence either, and a difference applies on its
// base: unchanged hosts are seen again, gone ones removed.
func TestReadDifferences(t *testing.T) {
	h := newHarness(t, Options{OnlineWindow: 15 * time.Minute})
	a := rhost("00:00:5e:00:53:0a", "10.0.0.10", true)
	b := rhost("00:00:5e:00:53:0b", "10.0.0.11", true)
	base := h.read(whole(t0, a, b))
	// A difference with nothing set: both seen again at t0+10m.
	p := events.PluginRead{ScanID: "r2", Finished: t0.Add(10 * time.Minute), Complete: true, Base: base}
	base = h.read(p)
	for _, mac := range []string{a.MAC, b.MAC} {
		if d := h.byMAC(mac); !d.LastSeen.Equal(t0.Add(10 * time.Minute)) {
			t.Fatalf("%s last seen %v after an unchanged read", mac, d.LastSeen)
		}
	}
	// b gone: a seen again, b not.
	p = events.PluginRead{ScanID: "r3", Finished: t0.Add(20 * time.Minute), Complete: true, Base: base, Gone: []string{b.MAC}}
	h.read(p)
	if d := h.byMAC(b.MAC); !d.LastSeen.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("a gone host was seen: %v", d.LastSeen)
	}
	if got := len(h.inv.reads[router].hosts); got != 1 {
		t.Fatalf("host set holds %d", got)
	}
	// An incomplete read with a only: not evidence, b stays online.
	inc := whole(t0.Add(26*time.Minute), a)
	inc.Complete = false
	inc.Errors = []string{"interface/bridge/host: malformed reply"}
	h.read(inc)
	h.tick(t0.Add(26 * time.Minute))
	if d := h.byMAC(b.MAC); d.Presence != presenceOffline {
		// b had its evidence at t0+20m (a complete read without it).
		t.Fatalf("b: %s", d.Presence)
	}
	h.checkReload()
}

// Attachments: the port a host is on, the move between ports as
// device.attached, the switch as a device once the inventory has it.
func TestReadAttachment(t *testing.T) {
	h := newHarness(t, Options{})
	laptop := rhost("00:00:5e:00:53:33", "10.0.0.33", true)
	laptop.Port = "ether3"
	h.read(whole(t0, laptop))
	d := h.byMAC(laptop.MAC)
	if d.AttachedTo == nil || d.AttachedTo.DeviceID != nil || d.AttachedTo.Peer != "core" || d.AttachedTo.Port != "ether3" || d.AttachedTo.Source != router {
		t.Fatalf("attached %s", js(d.AttachedTo))
	}
	// The router itself is swept: its device is the attachment's.
	h.sweep(sweepAt(t0.Add(time.Minute), host("10.0.0.1", "00:00:5e:00:53:01")))
	laptop.Port, laptop.SSID, laptop.Band, laptop.Signal = "wifi1", "lab", "5ghz-ax", -58
	h.read(whole(t0.Add(2*time.Minute), laptop))
	d = h.byMAC(laptop.MAC)
	core := h.byMAC("00:00:5e:00:53:01")
	if d.AttachedTo.DeviceID == nil || *d.AttachedTo.DeviceID != core.ID || d.AttachedTo.SSID != "lab" || d.AttachedTo.Signal == nil || *d.AttachedTo.Signal != -58 {
		t.Fatalf("attached %s", js(d.AttachedTo))
	}
	es := h.entries()
	last := es[len(es)-1]
	if last.Kind != projections.ChangeAttached || !strings.Contains(last.Summary, "moved to core Wi-Fi lab (5ghz-ax)") {
		t.Fatalf("last entry %s", js(last))
	}
	// A signal change alone is no entry.
	n := len(es)
	laptop.Signal = -70
	h.read(whole(t0.Add(3*time.Minute), laptop))
	if got := len(h.entries()); got != n {
		t.Errorf("a signal change made %d entries", got-n)
	}
	h.checkReload()
}

// An uplink port (many hosts behind it) does not take the attachment from
// an access port another source reports.
func TestReadAttachmentPrefersAccessPorts(t *testing.T) {
	h := newHarness(t, Options{})
	var hosts []events.ReadHost
	for _, m := range []string{"00:00:5e:00:53:40", "00:00:5e:00:53:41", "00:00:5e:00:53:42"} {
		x := rhost(m, "", true)
		x.Port = "ether1-uplink"
		hosts = append(hosts, x)
	}
	// The access switch says the first one is on its ether7.
	sw := rhost("00:00:5e:00:53:40", "", true)
	sw.Port = "ether7"
	h.applyEv(h.envelope(events.KindPluginRead, events.PluginRead{ScanID: "s", Kind: "routerapi", Finished: t0, Started: t0, Complete: true,
		Peer: &events.ReadPeer{Name: "sw1"}, Set: []events.ReadHost{sw}, Hosts: 1}, t0, "routerapi:sw1", "routerapi:sw1", ""))
	h.read(whole(t0.Add(time.Minute), hosts...))
	if d := h.byMAC("00:00:5e:00:53:40"); d.AttachedTo.Peer != "sw1" || d.AttachedTo.Port != "ether7" {
		t.Fatalf("uplink took the attachment: %s", js(d.AttachedTo))
	}
	if d := h.byMAC("00:00:5e:00:53:41"); d.AttachedTo.Port != "ether1-uplink" {
		t.Fatalf("%s", js(d.AttachedTo))
	}
}

// A read's scan row: source, kind, rows, hosts, errors.
func TestReadScanRow(t *testing.T) {
	h := newHarness(t, Options{})
	p := whole(t0, rhost("00:00:5e:00:53:0a", "10.0.0.10", true))
	p.Rows = 7
	p.Complete = false
	p.Errors = []string{"ip/arp: HTTP 500 Internal Server Error"}
	h.read(p)
	sc, err := h.scans.ListScans(t.Context(), projections.ScanFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Items[0]
	if s.Source != router || s.Kind != "routerapi" || s.Rows != 7 || s.HostsFound != 1 || s.Complete || len(s.Errors) != 1 {
		t.Fatalf("%s", js(s))
	}
}

func TestReadOutsideAddress(t *testing.T) {
	h := newHarness(t, Options{})
	if a, _ := h.inv.Outside(); a.IsValid() {
		t.Fatalf("outside %v before any read", a)
	}
	peer := func(outside string) *events.ReadPeer {
		p := *corePeer
		p.Outside = outside
		return &p
	}
	r := whole(t0)
	r.Peer = peer("198.51.100.7")
	h.read(r)
	// A read with its peer unchanged (no peer) keeps the address.
	base := h.seq
	h.read(events.PluginRead{ScanID: "r2", Finished: t0.Add(time.Minute), Complete: true, Base: base})
	if a, src := h.inv.Outside(); a.String() != "198.51.100.7" || src != router {
		t.Fatalf("outside %v from %q", a, src)
	}
	// Another router read later wins; one without an address does not.
	h.applyEv(h.envelope(events.KindPluginRead, events.PluginRead{ScanID: "o", Kind: "rpcrouter", Finished: t0.Add(2 * time.Minute), Complete: true,
		Peer: &events.ReadPeer{Name: "ap", Outside: "203.0.113.9"}}, t0.Add(2*time.Minute), "rpcrouter:ap", "rpcrouter:ap", ""))
	h.applyEv(h.envelope(events.KindPluginRead, events.PluginRead{ScanID: "o", Kind: "rpcrouter", Finished: t0.Add(3 * time.Minute), Complete: true,
		Peer: &events.ReadPeer{Name: "sw"}}, t0.Add(3*time.Minute), "rpcrouter:sw", "rpcrouter:sw", ""))
	if a, src := h.inv.Outside(); a.String() != "203.0.113.9" || src != "rpcrouter:ap" {
		t.Fatalf("outside %v from %q, want the newest read's", a, src)
	}
	// It is stored with the read's state: a reload knows it.
	if a, _ := h.load().Outside(); a.String() != "203.0.113.9" {
		t.Fatalf("after a reload: %v", a)
	}
	// A router that lost its address (its peer written without one).
	h.applyEv(h.envelope(events.KindPluginRead, events.PluginRead{ScanID: "o", Kind: "rpcrouter", Finished: t0.Add(4 * time.Minute), Complete: true,
		Peer: &events.ReadPeer{Name: "ap"}}, t0.Add(4*time.Minute), "rpcrouter:ap", "rpcrouter:ap", ""))
	if a, src := h.inv.Outside(); a.String() != "198.51.100.7" || src != router {
		t.Fatalf("outside %v from %q after ap lost its address", a, src)
	}
}

// The devices a failing source saw last share one coverage (made overdue
// together, each would hold a copy); one with another coverage has its
// own, and each reads as its own.
func TestCoverageShared(t *testing.T) {
	h := newHarness(t, Options{OnlineWindow: 15 * time.Minute})
	var hosts []events.ReadHost
	for k := range 3 {
		hosts = append(hosts, rhost(fmt.Sprintf("3c:22:fb:00:00:%02x", k), fmt.Sprintf("10.0.0.%d", 30+k), true))
	}
	h.read(whole(t0, hosts...))
	h.failed(t0.Add(5*time.Minute), "ip/arp: HTTP 401 Unauthorized")
	pc := host("10.0.0.40", "00:11:22:00:00:40")
	h.sweep(sweepAt(t0.Add(6*time.Minute), pc))
	h.tick(t0.Add(40 * time.Minute))
	var shared *projections.Coverage
	for k := range 3 {
		d := h.inv.byKey[macKey(fmt.Sprintf("3c:22:fb:00:00:%02x", k))]
		if d == nil || d.coverage == nil || d.coverage.Source != router {
			t.Fatalf("device %d: coverage %+v", k, d)
		}
		if shared == nil {
			shared = d.coverage
		} else if d.coverage != shared {
			t.Errorf("device %d holds its own copy of the same coverage", k)
		}
	}
	if d := h.byMAC("00:11:22:00:00:40"); d.Coverage == nil || d.Coverage.Source == router || d.Coverage.Source == "" {
		t.Fatalf("the swept PC: coverage %s", js(d.Coverage))
	}
	if d := h.byMAC("3c:22:fb:00:00:01"); d.Coverage == nil || !strings.Contains(d.Coverage.Reason, "401") {
		t.Fatalf("coverage read back: %s", js(d.Coverage))
	}
}
