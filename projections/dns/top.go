package dns

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections/inventory"
)

// Top is the busiest domains and clients of the lookups in a range: the
// web interface's DNS page (every device) and the device page (one).
type Top struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Lookups and Blocked are the range's totals.
	Lookups uint64 `json:"lookups"`
	Blocked uint64 `json:"blocked"`
	// Domains are the most looked-up domains, most first; BlockedDomains
	// the most blocked ones (only those with a block).
	Domains        []DomainTotal `json:"domains"`
	BlockedDomains []DomainTotal `json:"blocked_domains"`
	// Clients are the devices that looked up most, and the addresses no
	// device held at the time (DeviceID ""), most first; empty for one
	// device's top.
	Clients []ClientTotal `json:"clients"`
}

// DomainTotal is one domain's lookups in a range.
type DomainTotal struct {
	Domain  string `json:"domain"`
	Count   uint64 `json:"count"`
	Blocked uint64 `json:"blocked"`
}

// ClientTotal is one device's lookups in a range, or one address's that
// no device held.
type ClientTotal struct {
	DeviceID string `json:"device_id,omitempty"`
	Client   string `json:"client,omitempty"`
	Count    uint64 `json:"count"`
	Blocked  uint64 `json:"blocked"`
}

// TopLookups sums the lookups of the hours starting in [since, until)
// (as DeviceLookups counts them) and keeps the limit busiest of each
// list (DefaultLimit when 0, at most MaxLimit). With device "" it counts
// every client, each row for the device that held its address during
// that hour; with a device id only that device's rows, and an unknown
// device is projections.ErrNotFound.
func (p *Projection) TopLookups(ctx context.Context, device string, since, until time.Time, limit int) (Top, error) {
	top := Top{Since: since.UTC(), Until: until.UTC(), Domains: []DomainTotal{}, BlockedDomains: []DomainTotal{}, Clients: []ClientTotal{}}
	limit = clampLimit(limit)
	var mine map[uint32]bool // the device's client ids
	var own map[string]bool  // the device and those merged into it
	if device != "" {
		hs, err := p.opts.Addresses.DeviceHoldings(device)
		if err != nil {
			return top, err
		}
		own = inventory.HoldingOwners(device, hs)
		mine = map[uint32]bool{}
		p.mu.RLock()
		for _, h := range hs {
			if cid, ok := p.clientIDs[h.IP.Unmap()]; ok {
				mine[cid] = true
			}
		}
		p.mu.RUnlock()
		if len(mine) == 0 {
			return top, nil
		}
	}
	first, _ := hourOf(max(since.UTC().Unix(), 0))
	end, ok := hourOf(until.UTC().Unix() + 3599)
	if !ok || end <= first {
		return top, nil
	}
	p.mu.RLock()
	names := p.domains[:len(p.domains):len(p.domains)]
	clients := p.clients[:len(p.clients):len(p.clients)]
	p.mu.RUnlock()
	idx := p.index()
	domains := make([]DomainTotal, len(names)+1) // by domain id
	byClient := map[string]*ClientTotal{}
	err := p.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bHours).Cursor()
		var seek [4]byte
		binary.BigEndian.PutUint32(seek[:], first)
		n := 0
		for k, v := c.Seek(seek[:]); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return fmt.Errorf("dns: hour key %x: %w", k, errMalformed)
			}
			h, cid := binary.BigEndian.Uint32(k), binary.BigEndian.Uint32(k[4:])
			if h >= end {
				break
			}
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if cid == 0 || int(cid) > len(clients) || mine != nil && !mine[cid] {
				continue
			}
			ip := clients[cid-1]
			dev, held := idx.At(ip, time.Unix(int64(h)*3600, 0).UTC())
			if mine != nil && (!held || !own[dev]) {
				continue
			}
			var ct *ClientTotal
			if mine == nil {
				key := "d" + dev
				if !held {
					key = "a" + ip.String()
				}
				if ct = byClient[key]; ct == nil {
					ct = &ClientTotal{}
					if held {
						ct.DeviceID = dev
					} else {
						ct.Client = ip.String()
					}
					byClient[key] = ct
				}
			}
			err := eachLookup(v, func(l lookup) {
				if int(l.domain) > len(names) {
					return
				}
				d := &domains[l.domain]
				d.Count += l.count
				d.Blocked += l.blocked
				top.Lookups += l.count
				top.Blocked += l.blocked
				if ct != nil {
					ct.Count += l.count
					ct.Blocked += l.blocked
				}
			})
			if err != nil {
				return fmt.Errorf("dns: hour %d client %d: %w", h, cid, err)
			}
		}
		return nil
	})
	if err != nil {
		return top, err
	}
	for id := 1; id < len(domains); id++ {
		if d := domains[id]; d.Count > 0 || d.Blocked > 0 {
			d.Domain = names[id-1]
			top.Domains = append(top.Domains, d)
			if d.Blocked > 0 {
				top.BlockedDomains = append(top.BlockedDomains, d)
			}
		}
	}
	slices.SortFunc(top.Domains, func(a, b DomainTotal) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Domain, b.Domain))
	})
	slices.SortFunc(top.BlockedDomains, func(a, b DomainTotal) int {
		return cmp.Or(cmp.Compare(b.Blocked, a.Blocked), cmp.Compare(a.Domain, b.Domain))
	})
	for _, ct := range byClient {
		top.Clients = append(top.Clients, *ct)
	}
	slices.SortFunc(top.Clients, func(a, b ClientTotal) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.DeviceID, b.DeviceID), compareAddr(a.Client, b.Client))
	})
	top.Domains = top.Domains[:min(limit, len(top.Domains))]
	top.BlockedDomains = top.BlockedDomains[:min(limit, len(top.BlockedDomains))]
	top.Clients = top.Clients[:min(limit, len(top.Clients))]
	return top, nil
}

func compareAddr(a, b string) int {
	x, errx := netip.ParseAddr(a)
	y, erry := netip.ParseAddr(b)
	if errx != nil || erry != nil {
		return cmp.Compare(a, b)
	}
	return x.Compare(y)
}
