package inventory

import (
	"net/netip"
	"slices"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// Holding is one span during which a device held an address: from the
// address's first sighting until it was retired (Until zero: it still
// holds it). The traffic projection attributes flows by these.
type Holding struct {
	Device string
	IP     netip.Addr
	From   time.Time
	Until  time.Time
}

// HoldingsVersion changes whenever devices or their addresses may have
// changed, so a reader can cache what it built from Holdings.
func (i *Inventory) HoldingsVersion() uint64 {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.version
}

// Holdings lists every address span of every device.
func (i *Inventory) Holdings() []Holding {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]Holding, 0, len(i.devs))
	for _, d := range i.devs {
		out = appendHoldings(out, d)
	}
	return out
}

// DeviceHoldings lists one device's address spans (and those of the
// devices merged into it), or
// projections.ErrNotFound.
func (i *Inventory) DeviceHoldings(id string) ([]Holding, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	d := i.devs[id]
	if d == nil {
		return nil, projections.ErrNotFound
	}
	out := appendHoldings(nil, d)
	// The members merged into it: the API shows the group as this device,
	// so its traffic and lookups are theirs too (each Holding names the
	// member that held the address).
	for _, m := range i.membersOf(id) {
		out = appendHoldings(out, m)
	}
	return out, nil
}

// HoldingOwners are the device ids whose holdings count as id's: id and
// the devices merged into it, whose addresses DeviceHoldings lists too.
func HoldingOwners(id string, hs []Holding) map[string]bool {
	out := map[string]bool{id: true}
	for _, h := range hs {
		out[h.Device] = true
	}
	return out
}

func appendHoldings(out []Holding, d *device) []Holding {
	for _, a := range d.Addrs {
		if !a.ip.IsValid() {
			continue
		}
		h := Holding{Device: d.ID, IP: a.ip, From: a.FirstSeen}
		if a.RetiredAt != nil {
			h.Until = *a.RetiredAt
		}
		out = append(out, h)
	}
	return out
}

// HoldingIndex answers "which device held this address at time T" over
// a snapshot of Holdings.
type HoldingIndex struct {
	byIP map[netip.Addr][]Holding // each sorted by From
}

// NewHoldingIndex indexes hs.
func NewHoldingIndex(hs []Holding) *HoldingIndex {
	x := &HoldingIndex{byIP: make(map[netip.Addr][]Holding, len(hs))}
	for _, h := range hs {
		x.byIP[h.IP] = append(x.byIP[h.IP], h)
	}
	for _, l := range x.byIP {
		slices.SortFunc(l, func(a, b Holding) int {
			if c := a.From.Compare(b.From); c != 0 {
				return c
			}
			return cmpString(a.Device, b.Device)
		})
	}
	return x
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// At returns the device that held ip at t: among the spans that cover t
// the one that began last (a second device answering at an address
// takes it); when none covers t, the device that held it next (traffic
// seen before the first sweep found the address), else the one that
// held it last. ok is false for an address no device ever held.
func (x *HoldingIndex) At(ip netip.Addr, t time.Time) (device string, ok bool) {
	l := x.byIP[ip.Unmap()]
	if len(l) == 0 {
		return "", false
	}
	best := -1
	for k, h := range l {
		if h.From.After(t) {
			if best < 0 {
				return h.Device, true // the next holder
			}
			break
		}
		if h.Until.IsZero() || h.Until.After(t) {
			best = k
		}
	}
	if best >= 0 {
		return l[best].Device, true
	}
	return l[len(l)-1].Device, true // every span ended before t
}

// Spans returns the spans of ip, sorted by start.
func (x *HoldingIndex) Spans(ip netip.Addr) []Holding { return x.byIP[ip.Unmap()] }
