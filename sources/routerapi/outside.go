package routerapi

import (
	"context"
	"net/netip"
	"strings"

	"github.com/jocasta/jocasta/sources"
)

// The outside address: the IPv4 address the device holds on the interface
// of its default route. It is not one of the host tables: reading it is
// two small requests on every read (topology_only too), and a failure
// (a refused or malformed reply, no default route) leaves Peer.Outside
// empty without making the read incomplete or adding to its Errors, nor
// to its Rows.
//
// [U] ip/route and ip/address are not in the reference notes. Assumed,
// after the RouterOS 7 console: ip/route rows carry dst-address, gateway,
// immediate-gw ("203.0.113.1%ether1"; an interface name for a PPPoE
// client), routing-table and the flags active and disabled as "true" /
// "false" (absent is false; a reply with no active flag on any row is
// read as every enabled route active, see defaultInterfaces); ip/address rows carry address with its
// prefix length ("203.0.113.7/24"), interface, and the flags disabled
// and invalid.
type (
	routeRow struct {
		DstAddress   rosString `json:"dst-address"`
		Gateway      rosString `json:"gateway"`
		ImmediateGW  rosString `json:"immediate-gw"`
		RoutingTable rosString `json:"routing-table"`
		Active       rosString `json:"active"`
		Disabled     rosString `json:"disabled"`
	}
	addressRow struct {
		Address   rosString `json:"address"`
		Interface rosString `json:"interface"`
		Disabled  rosString `json:"disabled"`
		Invalid   rosString `json:"invalid"`
	}
)

// readOutside sets read.Peer.Outside. Only an expired or cancelled ctx
// is returned (it ends the read, as in any table); any other failure
// leaves Outside empty.
func (r *Reader) readOutside(ctx context.Context, read *sources.HostRead) error {
	var routes []routeRow
	err := r.c.get(ctx, "ip/route", "dst-address,gateway,immediate-gw,routing-table,active,disabled", &routes)
	if err == nil {
		ifaces := defaultInterfaces(routes)
		if len(ifaces) == 0 {
			return nil // no default route: no outside address
		}
		var addrs []addressRow
		if err = r.c.get(ctx, "ip/address", "address,interface,disabled,invalid", &addrs); err == nil {
			read.Peer.Outside = outsideAddress(ifaces, addrs)
			return nil
		}
	}
	if ctx.Err() != nil {
		return err
	}
	r.log.Debug("outside address not read", "err", err)
	return nil
}

// defaultInterfaces returns the interfaces of the active, enabled IPv4
// default routes of the main routing table, in reply order. A reply in
// which no row carries the active flag at all (a version that leaves it
// out, rather than one that says "false") is read as if each enabled
// route were active, so that the outside address does not vanish on it.
func defaultInterfaces(routes []routeRow) []string {
	flagged := false
	for _, rt := range routes {
		if strings.TrimSpace(string(rt.Active)) != "" {
			flagged = true
			break
		}
	}
	var out []string
	for _, rt := range routes {
		if strings.TrimSpace(string(rt.DstAddress)) != "0.0.0.0/0" || (flagged && !rt.Active.bool()) || rt.Disabled.bool() {
			continue
		}
		if t := strings.TrimSpace(string(rt.RoutingTable)); t != "" && t != "main" {
			continue // policy routing: not where the router's own traffic leaves
		}
		if name := routeInterface(rt); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// routeInterface is the interface a route leaves by: the part after '%'
// of its immediate gateway ("203.0.113.1%ether1"), or its gateway when
// that is an interface name and not an address (a PPPoE client's
// "pppoe-out1").
func routeInterface(rt routeRow) string {
	for _, gw := range []rosString{rt.ImmediateGW, rt.Gateway} {
		s := strings.TrimSpace(string(gw))
		if i := strings.LastIndexByte(s, '%'); i >= 0 {
			if name := strings.TrimSpace(s[i+1:]); name != "" {
				return name
			}
			continue
		}
		if s == "" {
			continue
		}
		if _, err := netip.ParseAddr(s); err != nil {
			return s
		}
	}
	return ""
}

// outsideAddress is the first usable IPv4 address (see sources.OutsideIPv4) of a
// row that is neither disabled nor invalid on the first of ifaces that
// has one; "" when none has.
func outsideAddress(ifaces []string, addrs []addressRow) string {
	for _, name := range ifaces {
		for _, a := range addrs {
			if a.Disabled.bool() || a.Invalid.bool() || strings.TrimSpace(string(a.Interface)) != name {
				continue
			}
			if ip := sources.OutsideIPv4(string(a.Address)); ip != "" {
				return ip
			}
		}
	}
	return ""
}
