package history

import (
	"cmp"
	"errors"
	"net/netip"
	"strings"
	"time"
)

// Sort fields of the devices at an instant: those of the live list
// (GET /api/devices) except last_seen, which the history rows do not
// keep (an observation time that moves with every sweep).
const (
	SortName      = "name"
	SortIP        = "ip"
	SortFirstSeen = "first_seen"
)

// ErrBadSortKey is returned by Order.After for a key that no device of
// that order has (a cursor that was not made by Order.Key).
var ErrBadSortKey = errors.New("history: not a sort key of this order")

// Order is a sort order of the devices at an instant, with the
// semantics of the live list's: ascending by Field, then by id; Desc is
// the exact reverse (the ids too). Field is SortName (the name, case
// insensitive), SortIP (CurrentIP, compared as addresses: no address
// first, then IPv4 before IPv6, each numerically) or SortFirstSeen; any
// other value orders by name.
type Order struct {
	Field string
	Desc  bool
}

// Compare orders a and b; it is a slices.SortFunc comparator.
func (o Order) Compare(a, b *Device) int {
	c := cmp.Or(o.byField(a, b), strings.Compare(a.ID, b.ID))
	if o.Desc {
		return -c
	}
	return c
}

func (o Order) byField(a, b *Device) int {
	switch o.Field {
	case SortIP:
		return a.CurrentIP().Compare(b.CurrentIP())
	case SortFirstSeen:
		return a.FirstSeen.Compare(b.FirstSeen)
	}
	return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
}

// Key is d's place in the order without its id, as a cursor keeps it:
// the lower-case name, the current IP ("" for none) or first_seen in
// RFC 3339.
func (o Order) Key(d *Device) string {
	switch o.Field {
	case SortIP:
		if ip := d.CurrentIP(); ip.IsValid() {
			return ip.String()
		}
		return ""
	case SortFirstSeen:
		return d.FirstSeen.UTC().Format(time.RFC3339Nano)
	}
	return strings.ToLower(d.Name)
}

// After returns a test of whether a device comes after the one whose
// Key was key and whose id was id, in this order. It returns
// ErrBadSortKey for a key Key cannot have given.
func (o Order) After(key, id string) (func(d *Device) bool, error) {
	at := Device{ID: id}
	switch o.Field {
	case SortIP:
		if key != "" {
			ip, err := netip.ParseAddr(key)
			if err != nil || ip.String() != key {
				return nil, ErrBadSortKey
			}
			at.Addresses = []Address{{IP: key}}
		}
	case SortFirstSeen:
		t, err := time.Parse(time.RFC3339Nano, key)
		if err != nil {
			return nil, ErrBadSortKey
		}
		at.FirstSeen = t
	default:
		at.Name = key
	}
	return func(d *Device) bool { return o.Compare(d, &at) > 0 }, nil
}

// CurrentIP is the address the device answered on at the instant, as the
// live list's "current address" but without last_seen, which is not kept:
// an address not retired before a retired one; among addresses not
// retired the most recently first seen, among retired ones the most
// recently retired; then the lower IP as text. It is the zero Addr for a
// device without a (valid) address.
func (d *Device) CurrentIP() netip.Addr {
	var best *Address
	for k := range d.Addresses {
		a := &d.Addresses[k]
		switch {
		case best == nil:
			best = a
		case (best.RetiredAt != nil) != (a.RetiredAt != nil):
			if a.RetiredAt == nil {
				best = a
			}
		case a.RetiredAt == nil && !a.FirstSeen.Equal(best.FirstSeen):
			if a.FirstSeen.After(best.FirstSeen) {
				best = a
			}
		case a.RetiredAt != nil && !a.RetiredAt.Equal(*best.RetiredAt):
			if a.RetiredAt.After(*best.RetiredAt) {
				best = a
			}
		case a.IP < best.IP:
			best = a
		}
	}
	if best == nil {
		return netip.Addr{}
	}
	ip, err := netip.ParseAddr(best.IP)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}
