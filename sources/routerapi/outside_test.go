package routerapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// defaultRoute is an active default route of the main table.
func defaultRoute(gateway, immediate string) R {
	r := R{"dst-address": "0.0.0.0/0", "gateway": gateway, "routing-table": "main", "active": "true", "disabled": "false", "dynamic": "true"}
	if immediate != "" {
		r["immediate-gw"] = immediate
	}
	return r
}

var (
	connected = R{"dst-address": "192.0.2.0/24", "gateway": "bridge", "immediate-gw": "bridge", "active": "true", "disabled": "false", "connect": "true"}
	viaEther1 = defaultRoute("203.0.113.1", "203.0.113.1%ether1")
	lanAddr   = R{"address": "192.0.2.1/24", "interface": "bridge", "disabled": "false", "invalid": "false"}
	wanAddr   = R{"address": "203.0.113.7/24", "interface": "ether1", "disabled": "false", "invalid": "false", "dynamic": "true"}
)

// The outside address comes from the default route's interface; failing
// to read it never fails the read, makes it incomplete or adds an error.
func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		name          string
		routes, addrs []R
		// unset: menus the router does not have (400 no such command).
		unset  []string
		faults map[string]string
		want   string
		// noAddresses: ip/address must not be asked (no default route).
		noAddresses bool
	}{
		{name: "default route via ether1", routes: []R{connected, viaEther1}, addrs: []R{lanAddr, wanAddr}, want: "203.0.113.7"},
		{name: "pppoe: the gateway is an interface", routes: []R{connected, defaultRoute("pppoe-out1", "pppoe-out1")},
			addrs: []R{lanAddr, {"address": "198.51.100.7/32", "network": "198.51.100.1", "interface": "pppoe-out1", "dynamic": "true"}}, want: "198.51.100.7"},
		{name: "pppoe without an immediate gateway", routes: []R{defaultRoute("pppoe-out1", "")},
			addrs: []R{{"address": "198.51.100.7/32", "interface": "pppoe-out1"}}, want: "198.51.100.7"},
		{name: "inactive, disabled and policy default routes beside the active one", routes: []R{
			{"dst-address": "0.0.0.0/0", "gateway": "198.51.100.1", "immediate-gw": "198.51.100.1%ether2", "distance": "2", "active": "false", "disabled": "false"},
			{"dst-address": "0.0.0.0/0", "gateway": "198.51.100.65", "immediate-gw": "198.51.100.65%ether3", "active": "true", "disabled": "true"},
			{"dst-address": "0.0.0.0/0", "gateway": "lte1", "routing-table": "via-lte", "active": "true", "disabled": "false"},
			{"dst-address": "0.0.0.0/0", "gateway": "198.51.100.129"}, // inactive: no flag at all
			viaEther1,
		}, addrs: []R{
			{"address": "198.51.100.2/26", "interface": "ether2"}, {"address": "198.51.100.66/26", "interface": "ether3"},
			{"address": "100.64.0.9/32", "interface": "lte1"}, wanAddr,
		}, want: "203.0.113.7"},
		{name: "a version that sends no active flag at all", routes: []R{
			{"dst-address": "203.0.113.0/24", "gateway": "ether1", "disabled": "false"},
			{"dst-address": "0.0.0.0/0", "gateway": "198.51.100.65", "immediate-gw": "198.51.100.65%ether3", "disabled": "true"},
			{"dst-address": "0.0.0.0/0", "gateway": "203.0.113.1", "immediate-gw": "203.0.113.1%ether1"},
		}, addrs: []R{{"address": "198.51.100.66/26", "interface": "ether3"}, wanAddr}, want: "203.0.113.7"},
		{name: "several addresses, one usable on the route's interface", routes: []R{viaEther1}, addrs: []R{
			lanAddr, {"address": "198.51.100.2/24", "interface": "ether2"},
			{"address": "203.0.113.9/24", "interface": "ether1", "disabled": "true"},
			{"address": "203.0.113.10/24", "interface": "ether1", "invalid": "true"},
			{"address": "2001:db8::7/64", "interface": "ether1"},
			wanAddr, {"address": "203.0.113.8/24", "interface": "ether1"},
		}, want: "203.0.113.7"},
		{name: "an address without prefix length", routes: []R{viaEther1}, addrs: []R{{"address": "203.0.113.7", "interface": "ether1"}}, want: "203.0.113.7"},
		{name: "no address on the route's interface", routes: []R{viaEther1}, addrs: []R{lanAddr}},
		{name: "values as JSON booleans", routes: []R{connected, viaEther1}, addrs: []R{lanAddr, wanAddr},
			faults: map[string]string{"ip/route": "numbers", "ip/address": "numbers"}, want: "203.0.113.7"},
		{name: "no default route", routes: []R{connected}, addrs: []R{lanAddr, wanAddr}, noAddresses: true},
		{name: "no routes at all", routes: []R{}, addrs: []R{wanAddr}, noAddresses: true},
		{name: "no route menu", unset: []string{"ip/route"}, addrs: []R{wanAddr}, noAddresses: true},
		{name: "route call refused (403)", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/route": "403"}, noAddresses: true},
		{name: "route call refused by policy", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/route": "500-policy"}, noAddresses: true},
		{name: "address call refused (403)", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/address": "403"}},
		{name: "no address menu", routes: []R{viaEther1}, unset: []string{"ip/address"}},
		{name: "route reply garbage", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/route": "garbage"}},
		{name: "route reply truncated", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/route": "truncated"}},
		{name: "address reply an object", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/address": "object"}},
		{name: "address reply html", routes: []R{viaEther1}, addrs: []R{wanAddr}, faults: map[string]string{"ip/address": "html"}},
		{name: "hostile values", routes: []R{
			{"dst-address": "0.0.0.0/0", "immediate-gw": "%", "gateway": "", "active": "true"},
			{"dst-address": "0.0.0.0/0", "immediate-gw": "203.0.113.1%", "gateway": "203.0.113.1", "active": "true"},
			{"dst-address": "0.0.0.0/00", "gateway": "ether2", "active": "true"},
			defaultRoute("ether1", ""),
		}, addrs: []R{
			{"address": "198.51.100.2/24", "interface": "ether2"},
			{"address": "999.0.0.1/24", "interface": "ether1"}, {"address": "/24", "interface": "ether1"}, {"interface": "ether1"},
			{"address": "0.0.0.0/0", "interface": "ether1"}, {"address": "224.0.0.1/4", "interface": "ether1"},
			{"address": "255.255.255.255/32", "interface": "ether1"}, {"address": "127.0.0.1/8", "interface": "ether1"},
			{"address": "::ffff:203.0.113.7/120", "interface": "ether1"}, {"address": "203.0.113.07/24", "interface": "ether1"},
			{"address": "203.0.113.7%ether1/24", "interface": "ether1"}, {"address": "203.0.113.7/24", "interface": " ether1x"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			f.Set("ip/route", tc.routes)
			f.Set("ip/address", tc.addrs)
			for _, m := range tc.unset {
				delete(f.Tables, m)
			}
			for m, fault := range tc.faults {
				f.Fault(m, fault)
			}
			res, err := serve(t, f, nil).Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			read := res.(*sources.HostRead)
			if read.Peer.Outside != tc.want {
				t.Errorf("outside %q, want %q", read.Peer.Outside, tc.want)
			}
			if !read.Complete || len(read.Errors) != 0 || len(read.Hosts) != 5 || read.Rows != 4+6+3+3+3+1 {
				t.Errorf("complete %v errors %v hosts %d rows %d", read.Complete, read.Errors, len(read.Hosts), read.Rows)
			}
			if n := f.Count("GET", "/rest/ip/address"); tc.noAddresses && n != 0 {
				t.Errorf("ip/address read %d times without a default route", n)
			}
		})
	}
}

// A read whose time runs out while it reads the outside address ends as
// any read whose time runs out.
func TestOutsideTimedOut(t *testing.T) {
	f := lab()
	f.Delay = 10 * time.Second
	f.Fault("ip/route", "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := serve(t, f, nil).Poll(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if read, _ := res.(*sources.HostRead); read == nil || read.Complete || len(read.Errors) != 1 || read.Peer.Outside != "" {
		t.Errorf("read %+v", res)
	}
}
