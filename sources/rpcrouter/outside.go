package rpcrouter

import (
	"context"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// The outside address: the IPv4 address the device holds on the logical
// interface of its default route. It is not one of the host tables:
// reading it is one call on every read (topology_only too), and a failure
// (the ACL does not grant network.interface dump, a malformed reply, no
// default route) leaves Peer.Outside empty without making the read
// incomplete or adding to its Errors, nor to its Rows.

// outsideRetry is how long a refused network.interface dump is not
// asked again.
const outsideRetry = time.Hour

// interfaceDump is the reply of network.interface dump.
//
// [U] Not in the reference notes; the shape is netifd's (ubus.c,
// netifd_handle_dump and netifd_dump_status, as read in a copy of its
// source): {"interface":[{"interface":"wan","up":true,"metric":0,
// "ipv4-address":[{"address":"203.0.113.7","mask":24}],
// "route":[{"target":"0.0.0.0","mask":0,"nexthop":"203.0.113.1"}],...}]},
// addresses and routes listed only while the interface is up, IPv6
// routes ("target":"::") in the same route list.
type interfaceDump struct {
	Interface []struct {
		Name   string `json:"interface"`
		Up     bool   `json:"up"`
		Metric int64  `json:"metric"`
		IPv4   []struct {
			Address string `json:"address"`
		} `json:"ipv4-address"`
		Route []struct {
			Target string `json:"target"`
			Mask   *int64 `json:"mask"`
		} `json:"route"`
	} `json:"interface"`
}

// readOutside sets read.Peer.Outside. Only an expired or cancelled ctx
// is returned (it ends the read, as in any table); any other failure
// leaves Outside empty.
func (r *Reader) readOutside(ctx context.Context, read *sources.HostRead) error {
	if !r.outsideDenied.IsZero() && r.now().Sub(r.outsideDenied) < outsideRetry {
		return nil
	}
	var d interfaceDump
	if err := r.c.call(ctx, "network.interface", "dump", nil, &d); err != nil {
		if ctx.Err() != nil {
			return err
		}
		if sessionGone(err) {
			if r.outsideDenied.IsZero() {
				r.log.Info("the login's ACL does not grant network.interface dump: no outside address for location.country (add it to the rpcd ACL, see docs/routers.md); asking again hourly", "err", err)
			}
			r.outsideDenied = r.now()
			return nil
		}
		r.log.Debug("outside address not read", "err", err)
		return nil
	}
	r.outsideDenied = time.Time{}
	read.Peer.Outside = outsideAddress(d)
	return nil
}

// outsideAddress is the first IPv4 address (when usable, see
// sources.OutsideIPv4) of the up interface with an IPv4 default route (target
// 0.0.0.0, mask 0); of several such, the one of lowest metric, the
// first listed among equals; "" when there is none.
func outsideAddress(d interfaceDump) string {
	best, bestMetric := "", int64(0)
	for _, ifc := range d.Interface {
		if !ifc.Up || len(ifc.IPv4) == 0 || (best != "" && ifc.Metric >= bestMetric) {
			continue
		}
		isDefault := false
		for _, rt := range ifc.Route {
			if strings.TrimSpace(rt.Target) == "0.0.0.0" && rt.Mask != nil && *rt.Mask == 0 {
				isDefault = true
				break
			}
		}
		if !isDefault {
			continue
		}
		if ip := sources.OutsideIPv4(ifc.IPv4[0].Address); ip != "" {
			best, bestMetric = ip, ifc.Metric
		}
	}
	return best
}
