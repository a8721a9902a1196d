package inventory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

const (
	macPrinter = "00:11:22:33:44:55"
	macPhone   = "3e:22:fb:01:02:03" // locally administered (0x3e & 0x02)
	macTV      = "3c:22:fb:aa:bb:cc"
)

func TestScenarios(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		run   func(h *harness)
		check func(t *testing.T, h *harness)
	}{
		{
			name: "first sighting",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", "00:11:22:33:44:55", "dns=printer.lab")))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Name != "printer.lab" || *d.MAC != macPrinter || d.MACRandom || *d.Vendor != "Acme Printers" {
					t.Errorf("device = %s", js(d))
				}
				if d.Presence != projections.PresenceOnline || !d.FirstSeen.Equal(t0) || !d.LastSeen.Equal(t0) {
					t.Errorf("presence/first/last = %s %s %s", d.Presence, d.FirstSeen, d.LastSeen)
				}
				wantAddr := []projections.Address{{IP: "10.0.0.5", Network: lab, FirstSeen: t0, LastSeen: t0}}
				if diff := cmp.Diff(wantAddr, d.Addresses); diff != "" {
					t.Errorf("addresses (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"sweep:lab"}, d.Sources); diff != "" {
					t.Errorf("sources: %s", diff)
				}
				if n := d.Names["dns"]; n.Name != "printer.lab" || !n.LastConfirmed.Equal(t0) {
					t.Errorf("names = %v", d.Names)
				}
				if e := d.Evidence["mac"]; e.Source != "sweep:lab" || !e.Time.Equal(t0) {
					t.Errorf("mac evidence = %+v", e)
				}
				es := h.entries()
				if diff := cmp.Diff([]string{projections.ChangeDiscovered}, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				e := es[0]
				if e.Summary != "printer.lab (10.0.0.5) was discovered by sweep:lab" || e.DeviceID != d.ID ||
					e.Actor != "sweep:lab" || e.Source != "sweep:lab" || e.Seq != 1 || e.Data != nil ||
					e.ID != "00000000000000000000000000000001-0" {
					t.Errorf("entry = %s", js(e))
				}
				sc, _ := h.scans.ListScans(context.Background(), projections.ScanFilter{})
				if len(sc.Items) != 1 || sc.Items[0].HostsFound != 1 || sc.Items[0].DurationMS != 10000 ||
					sc.Items[0].Kind != "devices" || !sc.Items[0].Complete || sc.Items[0].Networks[0] != lab {
					t.Errorf("scans = %s", js(sc))
				}
			},
		},
		{
			name: "second sweep confirms without entries",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab")))
				h.sweep(sweepAt(t0.Add(5*time.Minute), host("10.0.0.5", macPrinter, "dns=printer.lab")))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				t1 := t0.Add(5 * time.Minute)
				if !d.LastSeen.Equal(t1) || !d.FirstSeen.Equal(t0) || !d.Names["dns"].LastConfirmed.Equal(t1) || !d.Addresses[0].LastSeen.Equal(t1) {
					t.Errorf("device = %s", js(d))
				}
				if got := kinds(h.entries()); !slices.Equal(got, []string{projections.ChangeDiscovered}) {
					t.Errorf("kinds = %v", got)
				}
			},
		},
		{
			name: "address move retires the old address after the grace, not before",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPhone, "mdns=phone.local")))
				h.sweep(sweepAt(t0.Add(time.Hour), host("10.0.0.9", macPhone, "mdns=phone.local")))
				h.sweep(sweepAt(t0.Add(6*time.Hour), host("10.0.0.9", macPhone, "mdns=phone.local")))
				h.sweep(sweepAt(t0.Add(6*time.Hour+time.Second), host("10.0.0.9", macPhone, "mdns=phone.local")))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if !d.MACRandom {
					t.Errorf("mac_random = false for %s", *d.MAC)
				}
				if len(d.Addresses) != 2 || d.Addresses[0].IP != "10.0.0.9" || d.Addresses[0].RetiredAt != nil {
					t.Fatalf("addresses = %s", js(d.Addresses))
				}
				old := d.Addresses[1]
				if old.IP != "10.0.0.5" || old.RetiredAt == nil || !old.RetiredAt.Equal(t0.Add(6*time.Hour+time.Second)) {
					t.Errorf("old address = %s", js(old))
				}
				es := h.entries()
				want := []string{projections.ChangeDiscovered, projections.ChangeAddressAdded, projections.ChangeAddressRetired}
				if diff := cmp.Diff(want, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[1].Summary != "phone.local answered at new address 10.0.0.9 in 10.0.0.0/24" {
					t.Errorf("added summary = %q", es[1].Summary)
				}
				if es[2].Summary != "phone.local no longer uses address 10.0.0.5 (last seen 2026-11-22 10:00 UTC)" {
					t.Errorf("retired summary = %q", es[2].Summary)
				}
			},
		},
		{
			name: "retired address seen again is added back",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPhone)))
				h.sweep(sweepAt(t0.Add(7*time.Hour), host("10.0.0.9", macPhone)))
				h.sweep(sweepAt(t0.Add(8*time.Hour), host("10.0.0.5", macPhone)))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				for _, a := range d.Addresses {
					if a.RetiredAt != nil {
						t.Errorf("address %s still retired", a.IP)
					}
				}
				want := []string{projections.ChangeDiscovered, projections.ChangeAddressAdded, projections.ChangeAddressRetired, projections.ChangeAddressAdded}
				es := h.entries()
				if diff := cmp.Diff(want, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[3].Summary != "10.0.0.9 answered again at address 10.0.0.5" {
					t.Errorf("summary = %q", es[3].Summary)
				}
				if d.Name != "10.0.0.5" {
					t.Errorf("name = %q, want the current address", d.Name)
				}
			},
		},
		{
			name: "host dropping ICMP found through the neighbour table",
			run: func(h *harness) {
				hs := host("10.0.0.7", macTV)
				hs.Via, hs.RTTMicros = "neighbour", 0
				h.sweep(sweepAt(t0, hs))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Presence != projections.PresenceOnline || *d.MAC != macTV || *d.Vendor != "Apple, Inc." {
					t.Errorf("device = %s", js(d))
				}
			},
		},
		{
			name: "off-link device identified by address, later gains a MAC",
			run: func(h *harness) {
				off := events.SweepHost{IP: "192.168.50.7", Network: "192.168.50.0/24", Via: "icmp", Names: events.NamesOf(map[string]string{"dns": "nas.branch"})}
				s := sweepAt(t0, off)
				s.Networks = []string{"192.168.50.0/24"}
				h.sweep(s)
				s = sweepAt(t0.Add(5*time.Minute), off)
				s.Networks = []string{"192.168.50.0/24"}
				h.sweep(s)
				off.MAC = "00:11:22:00:00:07"
				s = sweepAt(t0.Add(10*time.Minute), off)
				s.Networks = []string{"192.168.50.0/24"}
				h.sweep(s)
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.MAC == nil || *d.MAC != "00:11:22:00:00:07" || d.Name != "nas.branch" {
					t.Errorf("device = %s", js(d))
				}
				es := h.entries()
				if diff := cmp.Diff([]string{projections.ChangeDiscovered, projections.ChangeMACChanged}, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[1].Summary != "nas.branch now has MAC 00:11:22:00:00:07" || es[1].Data == nil || es[1].Data.Old != nil || es[1].Data.New != "00:11:22:00:00:07" {
					t.Errorf("mac entry = %s", js(es[1]))
				}
				if es[0].DeviceID != d.ID || es[1].DeviceID != d.ID {
					t.Errorf("id changed: %s", js(es))
				}
			},
		},
		{
			name: "MAC-less sighting of a known address belongs to its holder",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter)))
				h.sweep(sweepAt(t0.Add(5*time.Minute), host("10.0.0.5", "")))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if !d.LastSeen.Equal(t0.Add(5 * time.Minute)) {
					t.Errorf("last_seen = %s", d.LastSeen)
				}
			},
		},
		{
			name: "names by source, precedence and name_changed",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "mdns=printer.local", "ssdp=Office Printer")))
				h.sweep(sweepAt(t0.Add(5*time.Minute), host("10.0.0.5", macPrinter, "dns=printer.lab")))
				h.sweep(sweepAt(t0.Add(10*time.Minute), host("10.0.0.5", macPrinter, "netbios=PRINTER")))
				h.sweep(sweepAt(t0.Add(15*time.Minute), host("10.0.0.5", macPrinter, "dns=lp1.lab")))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Name != "lp1.lab" {
					t.Errorf("name = %q", d.Name)
				}
				wantNames := map[string]projections.Name{
					"dns":     {Name: "lp1.lab", LastConfirmed: t0.Add(15 * time.Minute)},
					"mdns":    {Name: "printer.local", LastConfirmed: t0},
					"ssdp":    {Name: "Office Printer", LastConfirmed: t0},
					"netbios": {Name: "PRINTER", LastConfirmed: t0.Add(10 * time.Minute)},
				}
				if diff := cmp.Diff(wantNames, d.Names); diff != "" {
					t.Errorf("names (-want +got):\n%s", diff)
				}
				es := h.entries()
				want := []string{projections.ChangeDiscovered, projections.ChangeNameChanged, projections.ChangeNameChanged}
				if diff := cmp.Diff(want, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[0].Summary != "printer.local (10.0.0.5) was discovered by sweep:lab" {
					t.Errorf("summary 0 = %q", es[0].Summary)
				}
				if es[1].Summary != "printer.local is now named printer.lab" ||
					!cmp.Equal(es[1].Data, &projections.OldNew{Old: "printer.local", New: "printer.lab"}) {
					t.Errorf("entry 1 = %s", js(es[1]))
				}
				if es[2].Summary != "printer.lab is now named lp1.lab" {
					t.Errorf("entry 2 = %s", js(es[2]))
				}
			},
		},
		{
			name: "UPnP friendly name is the ssdp name",
			run: func(h *harness) {
				hs := host("10.0.0.8", macTV)
				hs.UPnP = &events.UPnP{FriendlyName: "Kitchen TV", Manufacturer: "Samsung", ModelName: "QE55"}
				hs.Services = []events.Service{{Instance: "Kitchen TV", Type: "_airplay._tcp", Port: 7000}}
				h.sweep(sweepAt(t0, hs))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Name != "Kitchen TV" || d.UPnP == nil || d.UPnP.Manufacturer != "Samsung" || len(d.Services) != 1 {
					t.Errorf("device = %s", js(d))
				}
			},
		},
		{
			name: "ports open and close",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab")))
				h.ports(events.PortScanCompleted{ScanID: "p1", Started: t0.Add(time.Minute), Finished: t0.Add(2 * time.Minute),
					Ports: "22,80,443", Targets: 1, ProbesSent: 3, Complete: true,
					Results: []events.PortResult{{IP: "10.0.0.5", Open: []uint16{80, 22}}}})
				// Incomplete: absence proves nothing.
				h.ports(events.PortScanCompleted{ScanID: "p2", Started: t0.Add(3 * time.Minute), Finished: t0.Add(4 * time.Minute),
					Ports: "22,80,443", Targets: 1, Complete: false,
					Results: []events.PortResult{{IP: "10.0.0.5", Open: []uint16{}}}})
				h.ports(events.PortScanCompleted{ScanID: "p3", Started: t0.Add(5 * time.Minute), Finished: t0.Add(6 * time.Minute),
					Ports: "22,80,443", Targets: 2, Complete: true,
					Results: []events.PortResult{{IP: "10.0.0.5", Open: []uint16{22}}, {IP: "10.0.0.99", Open: []uint16{80}}}})
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				want := []projections.Port{{Port: 22, Proto: "tcp", Service: "ssh", FirstSeen: t0.Add(2 * time.Minute), LastSeen: t0.Add(6 * time.Minute)}}
				if diff := cmp.Diff(want, d.Ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
				es := h.entries()
				wantK := []string{projections.ChangeDiscovered, projections.ChangePortOpened, projections.ChangePortOpened, projections.ChangePortClosed}
				if diff := cmp.Diff(wantK, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[1].Summary != "printer.lab opened port 22/tcp (ssh)" || es[3].Summary != "printer.lab closed port 80/tcp (http)" {
					t.Errorf("summaries: %q %q", es[1].Summary, es[3].Summary)
				}
				if !d.LastSeen.Equal(t0.Add(6*time.Minute)) || !slices.Contains(d.Sources, "ports:lab") {
					t.Errorf("open port is a sighting: %s", js(d))
				}
				sc, _ := h.scans.ListScans(context.Background(), projections.ScanFilter{Source: "ports:lab"})
				if len(sc.Items) != 3 || sc.Items[0].ID != "p3" || sc.Items[0].HostsFound != 2 || sc.Items[0].Kind != "ports" {
					t.Errorf("scans = %s", js(sc))
				}
			},
		},
		{
			name: "edits set and clear fields",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab")))
				id := h.devices(1)[0].ID
				h.edit(id, "alice", events.DeviceEdited{Label: ptr("Printer"), Group: ptr("office"), Ignored: ptr(true)}, t0.Add(time.Minute))
				h.edit(id, "alice", events.DeviceEdited{Label: ptr("Printer")}, t0.Add(2*time.Minute)) // no change
				h.edit(id, "bob", events.DeviceEdited{Cleared: []string{"label", "ignored"}, Notes: ptr("2nd floor")}, t0.Add(3*time.Minute))
				h.edit("dunknown", "bob", events.DeviceEdited{Label: ptr("x")}, t0.Add(4*time.Minute))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Label != nil || d.Group == nil || *d.Group != "office" || d.Ignored || d.Notes == nil || *d.Notes != "2nd floor" {
					t.Errorf("device = %s", js(d))
				}
				if e := d.Evidence["group"]; e.Actor != "alice" || e.Source != "api" || !e.Time.Equal(t0.Add(time.Minute)) {
					t.Errorf("group evidence = %+v", e)
				}
				es := h.entries()
				want := []string{projections.ChangeDiscovered, projections.ChangeEdited, projections.ChangeEdited, projections.ChangeEdited,
					projections.ChangeEdited, projections.ChangeEdited, projections.ChangeEdited}
				if diff := cmp.Diff(want, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				sums := []string{}
				for _, e := range es[1:] {
					sums = append(sums, e.Summary)
				}
				wantSums := []string{
					`alice set the label of printer.lab to "Printer"`,
					`alice set the group of printer.lab to "office"`,
					`alice marked printer.lab as ignored`,
					`bob cleared the label of printer.lab (was "Printer")`,
					`bob set the notes of printer.lab to "2nd floor"`,
					`bob marked printer.lab as not ignored`,
				}
				if diff := cmp.Diff(wantSums, sums); diff != "" {
					t.Errorf("summaries (-want +got):\n%s", diff)
				}
				if !cmp.Equal(es[1].Data, &projections.OldNew{Old: nil, New: "Printer"}) || es[1].Actor != "alice" {
					t.Errorf("label entry = %s", js(es[1]))
				}
				if !cmp.Equal(es[4].Data, &projections.OldNew{Old: "Printer", New: nil}) {
					t.Errorf("clear entry = %s", js(es[4]))
				}
				if !cmp.Equal(es[3].Data, &projections.OldNew{Old: false, New: true}) {
					t.Errorf("ignored entry = %s", js(es[3]))
				}
			},
		},
		{
			name: "edit summaries say set, changed and cleared",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPrinter, "dns=printer.lab")))
				id := h.devices(1)[0].ID
				h.edit(id, "alice", events.DeviceEdited{Type: ptr("printer")}, t0.Add(time.Minute))
				h.edit(id, "bob", events.DeviceEdited{Type: ptr("scanner")}, t0.Add(2*time.Minute))
				h.edit(id, "carol", events.DeviceEdited{Cleared: []string{"type"}}, t0.Add(3*time.Minute))
			},
			check: func(t *testing.T, h *harness) {
				es := h.entries()[1:]
				var sums []string
				for _, e := range es {
					sums = append(sums, e.Summary)
				}
				want := []string{
					`alice set the type of printer.lab to "printer"`,
					`bob changed the type of printer.lab from "printer" to "scanner"`,
					`carol cleared the type of printer.lab (was "scanner")`,
				}
				if diff := cmp.Diff(want, sums); diff != "" {
					t.Errorf("summaries (-want +got):\n%s", diff)
				}
				if !cmp.Equal(es[1].Data, &projections.OldNew{Old: "printer", New: "scanner"}) || es[1].Actor != "bob" {
					t.Errorf("change entry = %s", js(es[1]))
				}
			},
		},
		{
			name: "clock tick turns a device offline once a complete sweep missed it",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macTV, "dns=tv.lab"), host("10.0.0.6", macPrinter)))
				h.sweep(sweepAt(t0.Add(5*time.Minute), host("10.0.0.6", macPrinter)))
				h.tick(t0.Add(15 * time.Minute)) // exactly at the window: still online
				h.tick(t0.Add(15*time.Minute + time.Second))
			},
			check: func(t *testing.T, h *harness) {
				tv := h.device("10.0.0.5")
				if tv.Presence != projections.PresenceOffline {
					t.Errorf("tv presence = %s", tv.Presence)
				}
				if pr := h.device("10.0.0.6"); pr.Presence != projections.PresenceOnline {
					t.Errorf("printer presence = %s", pr.Presence)
				}
				es := h.entries()
				last := es[len(es)-1]
				if last.Kind != projections.ChangeOffline || last.Summary != "tv.lab went offline (last seen 2026-11-22 10:00 UTC)" ||
					last.Source != SourceClock || last.Seq != 4 || !cmp.Equal(last.Data, &projections.OldNew{Old: "online", New: "offline"}) {
					t.Errorf("entry = %s", js(last))
				}
				if n := len(es); n != 3 {
					t.Errorf("entries = %v", kinds(es))
				}
				dl, ok := h.inv.NextPresenceDeadline()
				if !ok || !dl.Equal(t0.Add(20*time.Minute)) {
					t.Errorf("deadline = %s %v, want the printer's", dl, ok)
				}
			},
		},
		{
			name: "incomplete sweeps never turn a device offline",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
				h.sweep(incomplete(t0.Add(10 * time.Minute)))
				h.sweep(incomplete(t0.Add(20 * time.Minute)))
				h.tick(t0.Add(30 * time.Minute))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Presence != projections.PresenceOnline {
					t.Errorf("presence = %s", d.Presence)
				}
				if _, ok := h.inv.NextPresenceDeadline(); ok {
					t.Errorf("an overdue device without evidence still has a deadline")
				}
				// The first complete sweep is the evidence.
				h.sweep(sweepAt(t0.Add(35 * time.Minute)))
				if d := h.devices(1)[0]; d.Presence != projections.PresenceOffline {
					t.Errorf("after a complete sweep: presence = %s", d.Presence)
				}
			},
		},
		{
			name: "a complete sweep of another network is no evidence",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
				other := sweepAt(t0.Add(20 * time.Minute))
				other.Networks = []string{"10.9.0.0/24"}
				h.sweep(other)
			},
			check: func(t *testing.T, h *harness) {
				if d := h.devices(1)[0]; d.Presence != projections.PresenceOnline {
					t.Errorf("presence = %s", d.Presence)
				}
			},
		},
		{
			name: "watched device goes quiet, and back online",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macTV, "dns=tv.lab")))
				id := h.devices(1)[0].ID
				h.watch(id, "alice", true, t0.Add(time.Minute))
				h.watch(id, "alice", true, t0.Add(2*time.Minute)) // no change
				h.sweep(sweepAt(t0.Add(16 * time.Minute)))
				h.sweep(sweepAt(t0.Add(20*time.Minute), host("10.0.0.5", macTV, "dns=tv.lab")))
			},
			check: func(t *testing.T, h *harness) {
				es := h.entries()
				want := []string{projections.ChangeDiscovered, projections.ChangeWatchStarted, projections.ChangeQuiet, projections.ChangeOnline}
				if diff := cmp.Diff(want, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				if es[1].Summary != "alice started watching tv.lab" || es[2].Summary != "tv.lab went quiet (last seen 2026-11-22 10:00 UTC)" ||
					es[3].Summary != "tv.lab is back online" {
					t.Errorf("summaries: %q / %q / %q", es[1].Summary, es[2].Summary, es[3].Summary)
				}
				ws, err := h.inv.WatchState(es[0].DeviceID)
				if err != nil || !ws.Watched || ws.Presence != projections.PresenceOnline {
					t.Errorf("watch state = %+v, %v", ws, err)
				}
			},
		},
		{
			name: "watching an offline device makes it quiet, unwatching offline",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macTV)))
				h.sweep(sweepAt(t0.Add(16 * time.Minute)))
				id := h.devices(1)[0].ID
				h.watch(id, "alice", true, t0.Add(17*time.Minute))
			},
			check: func(t *testing.T, h *harness) {
				d := h.devices(1)[0]
				if d.Presence != projections.PresenceQuiet || !d.Watched {
					t.Errorf("presence = %s watched = %v", d.Presence, d.Watched)
				}
				h.watch(d.ID, "alice", false, t0.Add(18*time.Minute))
				if d := h.devices(1)[0]; d.Presence != projections.PresenceOffline {
					t.Errorf("after unwatch presence = %s", d.Presence)
				}
			},
		},
		{
			name: "another device answering at an address takes it over",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPhone)))
				h.sweep(sweepAt(t0.Add(time.Hour), host("10.0.0.5", macTV)))
				h.ports(events.PortScanCompleted{Started: t0.Add(61 * time.Minute), Finished: t0.Add(62 * time.Minute),
					Ports: "22", Complete: true, Results: []events.PortResult{{IP: "10.0.0.5", Open: []uint16{22}}}})
			},
			check: func(t *testing.T, h *harness) {
				ds := h.devices(2)
				for _, d := range ds {
					if d.Addresses[0].RetiredAt != nil {
						t.Errorf("%s: address retired early", *d.MAC)
					}
					switch *d.MAC {
					case macTV:
						if len(d.Ports) != 1 {
							t.Errorf("tv ports = %v", d.Ports)
						}
					case macPhone:
						if len(d.Ports) != 0 {
							t.Errorf("phone got the port scan: %v", d.Ports)
						}
					}
				}
			},
		},
		{
			name: "retention purge keeps protected devices",
			run: func(h *harness) {
				h.sweep(sweepAt(t0, host("10.0.0.5", macPhone), host("10.0.0.6", macPrinter, "dns=printer.lab"), host("10.0.0.7", macTV)))
				ids := map[string]string{}
				for _, d := range h.devices(3) {
					ids[*d.MAC] = d.ID
				}
				h.edit(ids[macPrinter], "alice", events.DeviceEdited{Label: ptr("Printer")}, t0.Add(time.Minute))
				h.sweep(sweepAt(t0.Add(48*time.Hour), host("10.0.0.7", macTV)))
				cut := t0.Add(24 * time.Hour)
				counts, del, err := h.inv.PurgePlan(context.Background(), Cutoffs{History: &cut, Devices: &cut})
				if err != nil {
					h.t.Fatal(err)
				}
				if !slices.Equal(del, []string{ids[macPhone]}) {
					h.t.Errorf("plan deletes %v, want the phone %s", del, ids[macPhone])
				}
				// 3 discovered + 1 edit before the cutoff, and the phone's own
				// offline entry after it; one old scan, which the scan log
				// counts (projections/scanlog).
				if _, scans := counts["scans"]; counts["changes"] != 5 || scans || counts["devices"] != 1 {
					h.t.Errorf("counts = %v", counts)
				}
				if n, err := h.scans.RowsBefore(context.Background(), cut); n != 1 || err != nil {
					h.t.Errorf("old scans = %d, %v", n, err)
				}
				counts["scans"] = 1
				// The plan names the TV too, but it was seen after the cutoff: kept.
				h.purge(events.RetentionPurged{HistoryBefore: &cut, DevicesBefore: &cut, Counts: counts,
					DeletedDevices: append(del, ids[macTV], ids[macPrinter])}, t0.Add(49*time.Hour))
			},
			check: func(t *testing.T, h *harness) {
				ds := h.devices(2)
				for _, d := range ds {
					if *d.MAC == macPhone {
						t.Errorf("phone not deleted")
					}
				}
				es := h.entries()
				// Left: the printer's offline entry (after the cutoff) and the deletion.
				if diff := cmp.Diff([]string{projections.ChangeOffline, projections.ChangeDeleted}, kinds(es)); diff != "" {
					t.Fatalf("kinds: %s", diff)
				}
				es = es[1:]
				if es[0].Summary != "10.0.0.5 was deleted by retention (last seen 2026-11-22 10:00 UTC)" || es[0].Actor != SourceRetention {
					t.Errorf("entries = %s", js(es))
				}
				de, _ := h.inv.ListEvents(context.Background(), projections.EventFilter{Device: es[0].DeviceID})
				if len(de.Items) != 1 {
					t.Errorf("deleted device's entries = %s", js(de))
				}
				sc, _ := h.scans.ListScans(context.Background(), projections.ScanFilter{})
				if len(sc.Items) != 1 {
					t.Errorf("scans = %s", js(sc))
				}
				if _, err := h.inv.Device(context.Background(), es[0].DeviceID); err == nil {
					t.Errorf("deleted device still answers")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts)
			tc.run(h)
			tc.check(t, h)
			h.checkReload()
		})
	}
}
