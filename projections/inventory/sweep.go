package inventory

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Identity keys.
func macKey(mac string) string { return "m/" + mac }

// keyMAC is mac, as the bytes of key when key is its macKey: a
// MAC-keyed device holds one string for both.
func keyMAC(key, mac string) string {
	if m, ok := strings.CutPrefix(key, "m/"); ok && m == mac {
		return m
	}
	return mac
}
func ipKey(ip string) string { return "i/" + ip }

// normalizeMAC returns mac in lower-case colon form, "" when it is not a
// MAC (or all zeros, which some neighbour tables show for incomplete
// entries).
func normalizeMAC(s string) string {
	if s == "" {
		return ""
	}
	if canonicalMAC(s) {
		return s
	}
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) == 0 {
		return ""
	}
	zero := true
	for _, b := range hw {
		if b != 0 {
			zero = false
		}
	}
	if zero {
		return ""
	}
	return strings.ToLower(hw.String())
}

// canonicalMAC reports whether s is already a non-zero 6-byte MAC in
// lower-case colon form (what sweeps record), the fast path.
func canonicalMAC(s string) bool {
	if len(s) != 17 {
		return false
	}
	zero := true
	for i := 0; i < 17; i++ {
		c := s[i]
		if i%3 == 2 {
			if c != ':' {
				return false
			}
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
		if c != '0' {
			zero = false
		}
	}
	return !zero
}

// normalizePrefix returns the canonical form of a CIDR prefix, "" when s
// is not one.
func normalizePrefix(s string) string {
	if s == "" {
		return ""
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return ""
	}
	var buf [64]byte
	if c := p.Masked().AppendTo(buf[:0]); string(c) != s {
		return string(c)
	}
	return s // already canonical (sweeps write it so): no allocation
}

// addrString is ip.String(), reusing s when that is what it already says
// (sweeps write canonical addresses), so no string is allocated.
func addrString(ip netip.Addr, s string) string {
	var buf [64]byte
	if c := ip.AppendTo(buf[:0]); string(c) != s {
		return string(c)
	}
	return s
}

// sweepTouch is what one sweep did to one device.
type sweepTouch struct {
	d       *device
	seen    []string  // addresses found in this sweep
	seen1   [1]string // seen's first address (most devices answer at one)
	isNew   bool
	derived bool // names, addresses or MAC changed: refresh search fields
}

// sweepPrep is a sweep.completed decoded and normalised ahead of Apply
// (Prepare runs it off the apply goroutine): everything here depends on
// the event alone.
type sweepPrep struct {
	fin, start time.Time
	nets       []string
	complete   bool
	errors     []string
	payload    *events.SweepCompleted
	hosts      []hostPrep
}

// hostPrep is one responder with its address parsed and MAC and network
// normalised. Responders whose IP does not parse are dropped.
type hostPrep struct {
	h       *events.SweepHost
	ip      netip.Addr
	ipStr   string
	mac     string
	network string
	names   hostNames
}

// hostNames is what a host was named, by resolver: the names trimmed,
// empty ones left out, and whether it gave an SSDP name at all (which
// then wins over its UPnP friendly name). It is read from the host's
// names ahead of apply.
type hostNames struct {
	list events.Names
	ssdp bool
}

// hostNamesOf reads a host's names. The list is ns itself when no name
// needs trimming (the common case); else a trimmed copy.
func hostNamesOf(ns events.Names) hostNames {
	var hn hostNames
	clean := true
	for _, n := range ns {
		if n.Source == "ssdp" {
			hn.ssdp = true
		}
		if n.Source == "" || n.Name == "" || strings.TrimSpace(n.Name) != n.Name {
			clean = false
		}
	}
	if clean {
		hn.list = ns
		return hn
	}
	hn.list = make(events.Names, 0, len(ns))
	for _, n := range ns {
		name := strings.TrimSpace(n.Name)
		if name == "" || n.Source == "" {
			continue
		}
		hn.list = append(hn.list, events.Name{Source: n.Source, Name: name})
	}
	return hn
}

// prepareSweep normalises a sweep and encodes its scan-log row.
func prepareSweep(ev events.Envelope, p *events.SweepCompleted) *sweepPrep {
	sp := &sweepPrep{fin: p.Finished.UTC(), start: p.Started.UTC(), complete: p.Complete, errors: p.Errors, payload: p}
	if p.Finished.IsZero() {
		sp.fin = ev.Time.UTC()
	}
	if p.Started.IsZero() {
		sp.start = sp.fin
	}
	// Hosts repeat the sweep's networks: normalise each string once.
	var lastNet, lastNorm string
	norm := func(n string) string {
		if n != lastNet || n == "" {
			lastNet, lastNorm = n, normalizePrefix(n)
		}
		return lastNorm
	}
	sp.nets = make([]string, 0, len(p.Networks))
	for _, n := range p.Networks {
		if c := norm(n); c != "" {
			sp.nets = append(sp.nets, c)
		} else {
			sp.nets = append(sp.nets, n)
		}
	}
	sp.hosts = make([]hostPrep, 0, len(p.Hosts))
	for k := range p.Hosts {
		h := &p.Hosts[k]
		ip, err := netip.ParseAddr(h.IP)
		if err != nil {
			continue // not an address: nothing to attach it to
		}
		ip = ip.Unmap()
		sp.hosts = append(sp.hosts, hostPrep{h: h, ip: ip, ipStr: addrString(ip, h.IP), mac: normalizeMAC(h.MAC), network: norm(h.Network), names: hostNamesOf(h.Names)})
	}
	return sp
}

// applySweep folds a sweep.completed into the inventory.
func (i *Inventory) applySweep(em *emitter, sp *sweepPrep) error {
	ev := em.ev
	fin, start, nets := sp.fin, sp.start, sp.nets
	// At most one touch a host: the slice never grows past its
	// capacity, so pointers into it stay valid.
	touched := make([]sweepTouch, 0, len(sp.hosts))
	var byDev map[*device]*sweepTouch // for big sweeps; small ones search touched
	if len(sp.hosts) > 16 {
		byDev = make(map[*device]*sweepTouch, len(sp.hosts))
	}
	find := func(d *device) *sweepTouch {
		if byDev != nil {
			return byDev[d]
		}
		for k := range touched {
			if touched[k].d == d {
				return &touched[k]
			}
		}
		return nil
	}
	for hi := range sp.hosts {
		hp := &sp.hosts[hi]
		h, ip, ipStr, mac := hp.h, hp.ip, hp.ipStr, hp.mac

		d, isNew, gained, err := i.identify(em, ipStr, mac, fin)
		if err != nil {
			return err
		}
		t := find(d)
		if t == nil {
			touched = append(touched, sweepTouch{d: d, isNew: isNew, derived: isNew})
			t = &touched[len(touched)-1]
			t.seen = t.seen1[:0]
			if byDev != nil {
				byDev[d] = t
			}
		}
		if gained {
			t.derived = true
		}
		if mac != "" && d.MAC == mac {
			d.Evidence.MAC = srcEvidOf(ev.Source, fin)
		}
		if err := i.sighting(em, t, ip, ipStr, hp.network, fin); err != nil {
			return err
		}
		if i.observe(d, h, &hp.names, ev.Source, fin) {
			t.derived = true
		}
		if t.isNew && t.d.Presence == "" {
			d.BestName = d.computeBestName()
			d.Presence = presenceOnline
			d.Evidence.Presence = srcEvidOf(ev.Source, fin)
			i.heap.push(d)
			summary := fmt.Sprintf("%s was discovered by %s", ipStr, ev.Source)
			if n := d.display(); n != ipStr {
				summary = fmt.Sprintf("%s (%s) was discovered by %s", n, ipStr, ev.Source)
			}
			if err := em.emit(projections.ChangeDiscovered, d.ID, summary, nil); err != nil {
				return err
			}
		}
	}

	for k := range touched {
		t := &touched[k]
		d := t.d
		// Retire addresses the device has not answered at for longer than
		// the grace, now that it answers elsewhere.
		for _, a := range d.Addrs {
			if a.RetiredAt != nil || slices.Contains(t.seen, a.IP) {
				continue
			}
			if fin.Sub(a.LastSeen) > i.opts.AddressGrace {
				rt := fin
				a.RetiredAt = &rt
				i.releaseIP(a.IP, d)
				t.derived = true
				d.Evidence.Addresses = srcEvidOf(ev.Source, fin)
				if err := em.emit(projections.ChangeAddressRetired, d.ID,
					fmt.Sprintf("%s no longer uses address %s (last seen %s)", d.display(), a.IP, summaryTime(a.LastSeen)), nil); err != nil {
					return err
				}
			}
		}
		nb, nbSrc := d.bestName()
		if n, ok := d.Names.get(nbSrc); ok && n.LastConfirmed.Equal(fin) {
			d.Evidence.Name = srcEvidOf(ev.Source, fin) // confirmed now
		}
		if nb != d.BestName {
			old := d.BestName
			d.BestName = nb
			t.derived = true
			d.Evidence.Name = srcEvidOf(ev.Source, fin)
			var summary string
			switch {
			case old == "":
				summary = fmt.Sprintf("%s is now named %s", d.currentAddr().IP, nb)
			case nb == "":
				summary = fmt.Sprintf("%s lost its name", old)
			default:
				summary = fmt.Sprintf("%s is now named %s", old, nb)
			}
			if err := em.emit(projections.ChangeNameChanged, d.ID, summary, &projections.OldNew{Old: emptyNil(old), New: emptyNil(nb)}); err != nil {
				return err
			}
		}
		if !t.isNew {
			if err := i.markSeen(em, d, fin); err != nil {
				return err
			}
		}
		if t.derived || d.current != d.currentAddrIP() {
			d.refreshDerived(i.opts.Vendor)
		}
		i.markDirty(d)
	}

	if sp.complete {
		i.recordComplete(nets, start)
		i.sourceDone(ev.Source, "sweep", start)
	} else {
		reason := "incomplete sweep"
		if len(sp.errors) > 0 {
			reason = sp.errors[0]
		}
		i.sourceFailing(ev.Source, "sweep", fin, reason)
	}
	return i.evaluate(em, fin, sp.complete)
}

// identify finds the device a host is, creating it when new. Identity is
// the MAC where one is known, else the address:
//
//   - with a MAC: the device with that MAC; else an address-only device
//     at the same address, which gains the MAC (device.mac_changed);
//     else a new device;
//   - without a MAC: the device that most recently answered at the
//     address (a host whose neighbour entry was missing this time); else
//     the address-only device of the address; else a new one.
//
// gained reports that an address-only device gained a MAC.
func (i *Inventory) identify(em *emitter, ip, mac string, at time.Time) (d *device, isNew, gained bool, err error) {
	if mac != "" {
		if d := i.byKey[macKey(mac)]; d != nil {
			return d, false, false, nil
		}
		if d := i.byKey[ipKey(ip)]; d != nil && d.MAC == "" {
			delete(i.byKey, d.Key)
			d.Key = macKey(mac)
			d.MAC = mac
			i.byKey[d.Key] = d
			d.Evidence.MAC = srcEvidOf(em.ev.Source, at)
			i.markDirty(d)
			err := em.emit(projections.ChangeMACChanged, d.ID,
				fmt.Sprintf("%s now has MAC %s", d.display(), mac), &projections.OldNew{Old: nil, New: mac})
			return d, false, true, err
		}
		return i.newDevice(macKey(mac), mac), true, false, nil
	}
	if d := i.currentHolder(ip); d != nil {
		return d, false, false, nil
	}
	if d := i.byKey[ipKey(ip)]; d != nil {
		return d, false, false, nil
	}
	return i.newDevice(ipKey(ip), ""), true, false, nil
}

// newDevice registers an empty device under key.
func (i *Inventory) newDevice(key, mac string) *device {
	id := deviceID(key, 0)
	for n := 1; i.devs[id] != nil; n++ {
		id = deviceID(key, n)
	}
	d := &device{ID: id, Key: key, MAC: keyMAC(key, mac), heapIdx: -1}
	i.devs[id] = d
	i.byKey[key] = d
	i.docs.add(d)
	return d
}

// sighting records that t.d answered at ip at time at.
func (i *Inventory) sighting(em *emitter, t *sweepTouch, ip netip.Addr, ipStr, network string, at time.Time) error {
	d := t.d
	src := em.ev.Source
	if !slices.Contains(t.seen, ipStr) {
		t.seen = append(t.seen, ipStr)
	}
	a := d.addr(ipStr)
	switch {
	case a == nil:
		a = &addrRec{IP: ipStr, Network: network, FirstSeen: at, LastSeen: at, ip: ip}
		d.Addrs = append(d.Addrs, a)
		t.derived = true
		d.Evidence.Addresses = srcEvidOf(src, at)
		if !t.isNew {
			where := ipStr
			if network != "" {
				where += " in " + network
			}
			if err := em.emit(projections.ChangeAddressAdded, d.ID,
				fmt.Sprintf("%s answered at new address %s", d.display(), where), nil); err != nil {
				return err
			}
		}
	case a.RetiredAt != nil:
		a.RetiredAt = nil
		t.derived = true
		d.Evidence.Addresses = srcEvidOf(src, at)
		if err := em.emit(projections.ChangeAddressAdded, d.ID,
			fmt.Sprintf("%s answered again at address %s", d.display(), ipStr), nil); err != nil {
			return err
		}
	}
	if at.After(a.LastSeen) {
		a.LastSeen = at
	}
	if network != "" {
		a.Network = network
	}
	i.holdIP(ipStr, d)
	if d.FirstSeen.IsZero() || at.Before(d.FirstSeen) {
		d.FirstSeen = at
	}
	if at.After(d.LastSeen) {
		d.LastSeen = at
	}
	d.Evidence.LastSeen = srcEvidOf(src, at)
	if at.After(d.SeenBy.value(src)) {
		d.SeenBy.set(src, at)
	}
	return nil
}

// observe records what a host said about itself: names (read from
// h.Names into names), services, UPnP. It reports whether anything
// searchable changed.
func (i *Inventory) observe(d *device, h *events.SweepHost, names *hostNames, src string, at time.Time) bool {
	changed := false
	setName := func(from, name string) {
		if old, ok := d.Names.get(from); !ok || old.Name != name {
			changed = true
		}
		d.Names.set(from, nameRec{Name: name, LastConfirmed: at})
	}
	for _, n := range names.list {
		setName(n.Source, n.Name)
	}
	if h.UPnP != nil {
		if fn := strings.TrimSpace(h.UPnP.FriendlyName); !names.ssdp && fn != "" {
			setName("ssdp", fn)
		}
		u := &upnpRec{FriendlyName: h.UPnP.FriendlyName, Manufacturer: h.UPnP.Manufacturer, ModelName: h.UPnP.ModelName}
		if d.UPnP == nil || *d.UPnP != *u {
			d.UPnP = u
		}
		d.Evidence.UPnP = srcEvidOf(src, at)
	}
	if len(h.Services) > 0 {
		svcs := make([]projections.Service, 0, len(h.Services))
		for _, s := range h.Services {
			svcs = append(svcs, projections.Service{Instance: s.Instance, Type: s.Type, Port: s.Port})
		}
		slices.SortFunc(svcs, func(a, b projections.Service) int {
			if c := strings.Compare(a.Type, b.Type); c != 0 {
				return c
			}
			if c := strings.Compare(a.Instance, b.Instance); c != 0 {
				return c
			}
			return int(a.Port) - int(b.Port)
		})
		svcs = slices.Compact(svcs)
		d.Services = svcs
		d.Evidence.Services = srcEvidOf(src, at)
	}
	d.addSource(src)
	return changed
}

// markSeen makes d online after a sighting at time at, with a
// device.online entry when it was offline or quiet.
func (i *Inventory) markSeen(em *emitter, d *device, at time.Time) error {
	switch {
	case d.Presence != presenceOnline:
		old := d.Presence
		d.Presence = presenceOnline
		d.Overdue = false
		d.coverage = nil
		delete(i.overdue, d.ID)
		i.heapUpdate(d)
		d.Evidence.Presence = srcEvidOf(em.ev.Source, at)
		return em.emitPresence(i.groupOnlineBesides(d), projections.ChangeOnline, d.ID, fmt.Sprintf("%s is back online", d.display()),
			&projections.OldNew{Old: old, New: presenceOnline})
	case d.Overdue:
		d.Overdue = false
		d.coverage = nil
		delete(i.overdue, d.ID)
		i.heapUpdate(d)
	default:
		i.heapUpdate(d)
	}
	return nil
}

// recordComplete notes that a complete sweep of nets started at start.
func (i *Inventory) recordComplete(nets []string, start time.Time) {
	if start.After(i.anyDone) {
		i.anyDone = start
		i.metaDirty = true
	}
	for _, n := range nets {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			continue
		}
		p = p.Masked()
		j, found := slices.BinarySearchFunc(i.sweeps, p, func(m sweepMark, p netip.Prefix) int { return comparePrefix(m.prefix, p) })
		switch {
		case !found:
			i.sweeps = slices.Insert(i.sweeps, j, sweepMark{prefix: p, start: start})
			i.metaDirty = true
		case start.After(i.sweeps[j].start):
			i.sweeps[j].start = start
			i.metaDirty = true
		}
	}
}

// currentAddrIP returns the parsed current address.
func (d *device) currentAddrIP() netip.Addr {
	if a := d.currentAddr(); a != nil {
		return a.ip
	}
	return netip.Addr{}
}

func emptyNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
