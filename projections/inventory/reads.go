package inventory

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// bucketReads holds the host set of every plugin source, as its
// plugin.read events left it: key "<source>\x00<mac>" → the host (JSON
// of events.ReadHost), and "<source>\x00" → the source's readMeta.
const bucketReads = "inventory.reads"

// readMeta is the stored state of one source's host set.
type readMeta struct {
	Seq  uint64          `json:"seq"`
	Peer events.ReadPeer `json:"peer"`
}

// hostSet is one plugin source's hosts, keyed by MAC.
type hostSet struct {
	readMeta
	hosts map[string]events.ReadHost
	// portHosts counts the hosts on each port, memory only: a port with
	// many hosts is an uplink, a poorer attachment than a port with one.
	portHosts map[string]int
}

// readPrep is a plugin.read decoded and normalised ahead of Apply.
type readPrep struct {
	p     *events.PluginRead
	fin   time.Time
	start time.Time
	set   []events.ReadHost // MACs normalised, bad ones dropped
	gone  []string
}

// prepareRead normalises a plugin read.
func prepareRead(ev events.Envelope, p *events.PluginRead) *readPrep {
	rp := &readPrep{p: p, fin: p.Finished.UTC(), start: p.Started.UTC()}
	if p.Finished.IsZero() {
		rp.fin = ev.Time.UTC()
	}
	if p.Started.IsZero() {
		rp.start = rp.fin
	}
	for _, h := range p.Set {
		mac := normalizeMAC(h.MAC)
		if mac == "" {
			continue
		}
		h.MAC = mac
		ips := h.IPs[:0:0]
		for _, s := range h.IPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				ips = append(ips, ip.Unmap().String())
			}
		}
		h.IPs = ips
		rp.set = append(rp.set, h)
	}
	for _, m := range p.Gone {
		if mac := normalizeMAC(m); mac != "" {
			rp.gone = append(rp.gone, mac)
		}
	}
	return rp
}

// readKey is the bucketReads key of a source's host (mac "" for its meta).
func readKey(source, mac string) []byte {
	return []byte(source + "\x00" + mac)
}

// markReadDirty queues a source's host (or, with mac "", its meta) for
// the next Flush.
func (i *Inventory) markReadDirty(source, mac string) {
	m := i.readsDirty[source]
	if m == nil {
		m = make(map[string]bool)
		i.readsDirty[source] = m
	}
	m[mac] = true
}

// applyRead folds a plugin.read into the inventory: the source's host set
// moves as the event says, then every host of it that the read saw (and
// every host that changed) is applied to its device.
func (i *Inventory) applyRead(em *emitter, rp *readPrep) error {
	ev, p := em.ev, rp.p
	src, fin := ev.Source, rp.fin
	hs := i.reads[src]
	if hs == nil {
		hs = &hostSet{hosts: make(map[string]events.ReadHost)}
		i.reads[src] = hs
	}
	// A difference from a read this projection does not hold as the base
	// (which the sink never writes) is taken as an incomplete read: its
	// hosts added, nothing removed.
	whole := p.Base == 0 || p.Base == hs.Seq
	var removed []string
	if p.Base == 0 && p.Complete {
		inSet := make(map[string]bool, len(rp.set))
		for _, h := range rp.set {
			inSet[h.MAC] = true
		}
		for mac := range hs.hosts {
			if !inSet[mac] {
				removed = append(removed, mac)
			}
		}
	} else if p.Base != 0 && whole {
		removed = rp.gone
	}
	slices.Sort(removed)
	for _, mac := range removed {
		if _, ok := hs.hosts[mac]; ok {
			delete(hs.hosts, mac)
			i.markReadDirty(src, mac)
		}
	}
	for _, h := range rp.set {
		hs.hosts[h.MAC] = h
		i.markReadDirty(src, h.MAC)
	}
	hs.Seq = ev.Seq
	if p.Peer != nil {
		hs.Peer = *p.Peer
	}
	i.markReadDirty(src, "")
	hs.portHosts = make(map[string]int)
	for _, h := range hs.hosts {
		if h.Port != "" {
			hs.portHosts[h.Port]++
		}
	}

	// The hosts to apply: every seen host after a complete read (each is
	// a sighting), and every host the event sets.
	var apply []events.ReadHost
	if p.Complete && whole {
		for _, h := range hs.hosts {
			apply = append(apply, h)
		}
		seen := 0
		for _, h := range apply {
			if h.Seen {
				apply[seen] = h
				seen++
			}
		}
		apply = apply[:seen]
		for _, h := range rp.set {
			if !h.Seen {
				apply = append(apply, h)
			}
		}
	} else {
		apply = rp.set
	}
	slices.SortFunc(apply, func(a, b events.ReadHost) int { return strings.Compare(a.MAC, b.MAC) })

	peerID := i.peerDevice(hs.Peer)
	for k := range apply {
		if err := i.applyReadHost(em, hs, &apply[k], peerID, fin); err != nil {
			return err
		}
	}
	// A host the source no longer lists is no longer attached through it.
	for _, mac := range removed {
		if d := i.byKey[macKey(mac)]; d != nil && d.Attached != nil && d.Attached.Source == src {
			d.Attached = nil
			i.markDirty(d)
		}
	}

	if p.Complete {
		i.sourceDone(src, p.Kind, rp.start)
	} else {
		reason := "incomplete read"
		if len(p.Errors) > 0 {
			reason = p.Errors[0]
		}
		i.sourceFailing(src, p.Kind, fin, reason)
	}
	return i.evaluate(em, fin, p.Complete)
}

// peerDevice returns the id of the inventory's device with one of the
// peer's MACs, "" when there is none.
func (i *Inventory) peerDevice(p events.ReadPeer) string {
	for _, m := range p.MACs {
		if d := i.byKey[macKey(normalizeMAC(m))]; d != nil {
			return d.ID
		}
	}
	return ""
}

// networkOf returns the swept prefix containing ip, the longest one, ""
// when none does.
func (i *Inventory) networkOf(ip netip.Addr) string {
	best := -1
	var out string
	for _, m := range i.sweeps {
		if m.prefix.Contains(ip) && m.prefix.Bits() > best {
			best, out = m.prefix.Bits(), m.prefix.String()
		}
	}
	return out
}

// applyReadHost applies one host of a source's read to its device.
func (i *Inventory) applyReadHost(em *emitter, hs *hostSet, h *events.ReadHost, peerID string, at time.Time) error {
	src := em.ev.Source
	// Identity: the device with the MAC; else an address-only device at
	// one of its addresses (found by the sweep off-link), which gains the
	// MAC; else a new device.
	var (
		d      *device
		isNew  bool
		gained bool
		err    error
	)
	if d = i.byKey[macKey(h.MAC)]; d == nil {
		for _, ip := range h.IPs {
			if c := i.byKey[ipKey(ip)]; c != nil && c.MAC == "" {
				d, isNew, gained, err = i.identify(em, ip, h.MAC, at)
				break
			}
		}
		if d == nil && err == nil {
			d, isNew = i.newDevice(macKey(h.MAC), h.MAC), true
		}
		if err != nil {
			return err
		}
	}
	t := &sweepTouch{d: d, isNew: isNew, derived: isNew || gained}
	if d.MAC == h.MAC {
		d.Evidence.MAC = srcEvidOf(src, at)
	}
	for _, s := range h.IPs {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if h.Seen {
			if err := i.sighting(em, t, ip, s, i.networkOf(ip), at); err != nil {
				return err
			}
			continue
		}
		if d.addr(s) == nil {
			// Known to the peer (a lease), not seen: the address is the
			// device's, since now.
			d.Addrs = append(d.Addrs, &addrRec{IP: s, Network: i.networkOf(ip), FirstSeen: at, LastSeen: at, ip: ip})
			i.holdIP(s, d)
			t.derived = true
			d.Evidence.Addresses = srcEvidOf(src, at)
			if !isNew {
				if err := em.emit(projections.ChangeAddressAdded, d.ID,
					fmt.Sprintf("%s holds new address %s (%s)", d.display(), s, src), nil); err != nil {
					return err
				}
			}
		}
	}
	if h.Seen {
		if len(h.IPs) == 0 {
			if d.FirstSeen.IsZero() {
				d.FirstSeen = at
			}
			if at.After(d.LastSeen) {
				d.LastSeen = at
			}
			d.Evidence.LastSeen = srcEvidOf(src, at)
		}
		d.SeenBy.set(src, at)
	}
	if isNew {
		if d.FirstSeen.IsZero() {
			d.FirstSeen, d.LastSeen = at, at
		}
	}
	names := hostNamesOf(events.NamesOf(h.Names))
	if i.observe(d, &events.SweepHost{}, &names, src, at) {
		t.derived = true
	}
	if err := i.attach(em, d, hs, h, peerID, at); err != nil {
		return err
	}
	nb, nbSrc := d.bestName()
	if n, ok := d.Names.get(nbSrc); ok && n.LastConfirmed.Equal(at) {
		d.Evidence.Name = srcEvidOf(src, at)
	}
	if nb != d.BestName && !isNew {
		old := d.BestName
		d.BestName = nb
		t.derived = true
		d.Evidence.Name = srcEvidOf(src, at)
		summary := fmt.Sprintf("%s is now named %s", d.display(), nb)
		if old != "" {
			summary = fmt.Sprintf("%s is now named %s", old, nb)
		}
		if nb == "" {
			summary = fmt.Sprintf("%s lost its name", old)
		}
		if err := em.emit(projections.ChangeNameChanged, d.ID, summary, &projections.OldNew{Old: emptyNil(old), New: emptyNil(nb)}); err != nil {
			return err
		}
	}
	switch {
	case isNew:
		d.BestName = d.computeBestName()
		d.Evidence.Presence = srcEvidOf(src, at)
		how := "seen by"
		if h.Seen {
			d.Presence = presenceOnline
			i.heap.push(d)
		} else {
			// Known to the peer, not seen by it: not online until something
			// sees it.
			d.Presence = presenceOffline
			how = "known to"
		}
		summary := fmt.Sprintf("%s was discovered: %s %s", d.display(), how, src)
		if err := em.emit(projections.ChangeDiscovered, d.ID, summary, nil); err != nil {
			return err
		}
	case h.Seen:
		if err := i.markSeen(em, d, at); err != nil {
			return err
		}
	}
	if t.derived || d.current != d.currentAddrIP() {
		d.refreshDerived(i.opts.Vendor)
	}
	i.markDirty(d)
	return nil
}

// attach records where h hangs off, from the host's port or wireless
// association on the peer. A device keeps one attachment: a wireless
// association before a wired port, a port with fewer hosts behind it (an
// access port) before one with more (an uplink), and otherwise the one it
// has, so that two sources do not take turns. A move is a device.attached
// entry; signal changes are not.
func (i *Inventory) attach(em *emitter, d *device, hs *hostSet, h *events.ReadHost, peerID string, at time.Time) error {
	if h.Port == "" && h.SSID == "" {
		if d.Attached != nil && d.Attached.Source == em.ev.Source {
			d.Attached = nil // the source no longer says where it is
		}
		return nil
	}
	next := &attachRec{Source: em.ev.Source, DeviceID: peerID, Peer: hs.Peer.Name, Port: h.Port, SSID: h.SSID,
		Band: h.Band, Signal: h.Signal, Behind: hs.portHosts[h.Port]}
	if next.SSID != "" {
		next.Behind = 1
	}
	old := d.Attached
	if old != nil && old.Source != next.Source {
		if next.Behind >= old.Behind {
			// Keep the better (or the current) attachment, unless its
			// source no longer lists the device.
			if other := i.reads[old.Source]; other != nil {
				if _, listed := other.hosts[d.MAC]; listed {
					return nil
				}
			}
		}
	}
	d.Attached = next
	if old != nil && (old.Source != next.Source || old.Port != next.Port || old.SSID != next.SSID || old.DeviceID != next.DeviceID) {
		return em.emit(projections.ChangeAttached, d.ID, fmt.Sprintf("%s moved to %s", d.display(), next.where()),
			&projections.OldNew{Old: old.where(), New: next.where()})
	}
	return nil
}

// attachRec is a device's attachment as stored.
type attachRec struct {
	Source   string `json:"source"`
	DeviceID string `json:"device_id,omitempty"`
	Peer     string `json:"peer,omitempty"`
	Port     string `json:"port,omitempty"`
	SSID     string `json:"ssid,omitempty"`
	Band     string `json:"band,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	// Behind counts the hosts on the port when it was recorded.
	Behind int `json:"behind,omitempty"`
}

// where says the attachment in words: "core ether3", "ap1 wifi lab (5GHz)".
func (a *attachRec) where() string {
	peer := a.Peer
	if peer == "" {
		peer = a.Source
	}
	switch {
	case a.SSID != "" && a.Band != "":
		return fmt.Sprintf("%s Wi-Fi %s (%s)", peer, a.SSID, a.Band)
	case a.SSID != "":
		return fmt.Sprintf("%s Wi-Fi %s", peer, a.SSID)
	}
	return peer + " " + a.Port
}

// view is the API form.
func (a *attachRec) view() *projections.Attachment {
	v := &projections.Attachment{Source: a.Source, Peer: a.Peer, Port: a.Port, SSID: a.SSID, Band: a.Band}
	if a.DeviceID != "" {
		id := a.DeviceID
		v.DeviceID = &id
	}
	if a.Signal != 0 {
		s := a.Signal
		v.Signal = &s
	}
	return v
}

// loadReads rebuilds the plugin sources' host sets.
func (i *Inventory) loadReads(tx *bolt.Tx) error {
	b := tx.Bucket([]byte(bucketReads))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		src, mac, ok := strings.Cut(string(k), "\x00")
		if !ok {
			return fmt.Errorf("read key %q", k)
		}
		hs := i.reads[src]
		if hs == nil {
			hs = &hostSet{hosts: make(map[string]events.ReadHost), portHosts: make(map[string]int)}
			i.reads[src] = hs
		}
		if mac == "" {
			return json.Unmarshal(v, &hs.readMeta)
		}
		var h events.ReadHost
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("read %q: %w", k, err)
		}
		hs.hosts[mac] = h
		if h.Port != "" {
			hs.portHosts[h.Port]++
		}
		return nil
	})
}

// flushReads writes the host sets' changes.
func (i *Inventory) flushReads(tx *bolt.Tx) error {
	if len(i.readsDirty) == 0 {
		return nil
	}
	b := tx.Bucket([]byte(bucketReads))
	if b == nil {
		return fmt.Errorf("inventory: flush: bucket %q missing", bucketReads)
	}
	for _, src := range sortedKeys(i.readsDirty) {
		hs := i.reads[src]
		for _, mac := range sortedKeys(i.readsDirty[src]) {
			var v []byte
			var err error
			switch h, ok := hs.hosts[mac]; {
			case mac == "":
				v, err = json.Marshal(hs.readMeta)
			case ok:
				v, err = json.Marshal(h)
			default:
				if err := b.Delete(readKey(src, mac)); err != nil {
					return fmt.Errorf("inventory: flush: delete read host: %w", err)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("inventory: flush: encode read host: %w", err)
			}
			if err := b.Put(readKey(src, mac), v); err != nil {
				return fmt.Errorf("inventory: flush: put read host: %w", err)
			}
		}
	}
	clear(i.readsDirty)
	return nil
}

// Outside is the outside address of the router read last (the newest
// plugin read whose peer gave one), with the source that read it; the
// zero Addr when no read gave one. The traffic map takes its home
// country from it when location.country is empty.
func (i *Inventory) Outside() (netip.Addr, string) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	var best *hostSet
	var src string
	for s, hs := range i.reads {
		if hs.Peer.Outside == "" || (best != nil && hs.Seq < best.Seq) {
			continue
		}
		best, src = hs, s
	}
	if best == nil {
		return netip.Addr{}, ""
	}
	a, err := netip.ParseAddr(best.Peer.Outside)
	if err != nil {
		return netip.Addr{}, ""
	}
	return a.Unmap(), src
}
