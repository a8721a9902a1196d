package rpcrouter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/rpcrouter/rpcroutertest"
)

type I = rpcroutertest.Interface

var (
	lo   = I{Name: "loopback", Up: true, Addresses: []string{"127.0.0.1/8"}}
	lan  = I{Name: "lan", Up: true, Addresses: []string{"192.0.2.1/24"}}
	wan  = I{Name: "wan", Up: true, Addresses: []string{"203.0.113.7/24"}, Routes: []string{"203.0.113.1/32 via 0.0.0.0", "0.0.0.0/0 via 203.0.113.1"}}
	wan6 = I{Name: "wan6", Up: true, Routes: []string{"::/0 via fe80::1"}}
)

// The outside address comes from the up interface with the default
// route; failing to read it never fails the read, makes it incomplete or
// adds an error.
func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ifaces set the dump when raw is empty; raw is a reply spelled out.
		ifaces []I
		raw    string
		setup  func(f *rpcroutertest.Fake)
		want   string
	}{
		{name: "default route on wan", ifaces: []I{lo, lan, wan, wan6}, want: "203.0.113.7"},
		{name: "pppoe", ifaces: []I{lo, lan, {Name: "wan", Up: true, Addresses: []string{"198.51.100.7/32"}, Routes: []string{"0.0.0.0/0 via 198.51.100.1"}}, wan6},
			want: "198.51.100.7"},
		{name: "a down interface with a default route beside the up one", raw: `{"interface":[
			{"interface":"wanb","up":false,"ipv4-address":[{"address":"198.51.100.7","mask":24}],"route":[{"target":"0.0.0.0","mask":0,"nexthop":"198.51.100.1"}]},
			{"interface":"wan","up":true,"ipv4-address":[{"address":"203.0.113.7","mask":24}],"route":[{"target":"0.0.0.0","mask":0,"nexthop":"203.0.113.1"}]}]}`,
			want: "203.0.113.7"},
		{name: "the lower metric of two uplinks", ifaces: []I{lan, {Name: "wan", Up: true, Metric: 20, Addresses: []string{"203.0.113.7/24"}, Routes: []string{"0.0.0.0/0 via 203.0.113.1"}},
			{Name: "wwan", Up: true, Metric: 10, Addresses: []string{"198.51.100.7/24"}, Routes: []string{"0.0.0.0/0 via 198.51.100.1"}}}, want: "198.51.100.7"},
		{name: "equal metrics: the first listed", ifaces: []I{lan, wan, {Name: "wwan", Up: true, Addresses: []string{"198.51.100.7/24"}, Routes: []string{"0.0.0.0/0 via 198.51.100.1"}}},
			want: "203.0.113.7"},
		{name: "several addresses: the first of the route's interface", ifaces: []I{
			{Name: "lan", Up: true, Addresses: []string{"192.0.2.1/24", "198.51.100.1/24"}},
			{Name: "wan", Up: true, Addresses: []string{"203.0.113.7/24", "203.0.113.8/24"}, Routes: []string{"0.0.0.0/0 via 203.0.113.1"}},
		}, want: "203.0.113.7"},
		{name: "an address carrying its prefix length", raw: `{"interface":[{"interface":"wan","up":true,"ipv4-address":[{"address":"203.0.113.7/24"}],"route":[{"target":"0.0.0.0","mask":0}]}]}`,
			want: "203.0.113.7"},
		{name: "only an IPv6 default route", ifaces: []I{lo, lan, wan6}},
		{name: "no default route", ifaces: []I{lo, lan}},
		{name: "a default route on an interface without address", ifaces: []I{lan, {Name: "wan", Up: true, Routes: []string{"0.0.0.0/0 via 203.0.113.1"}}}},
		{name: "not granted by the ACL", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { delete(f.ACL, "network.interface.dump") }},
		{name: "permission denied", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { f.Fault("network.interface.dump", "status6") }},
		{name: "no such object", setup: func(f *rpcroutertest.Fake) { delete(f.Replies, "network.interface.dump") }},
		{name: "no data", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { f.Fault("network.interface.dump", "nodata") }},
		{name: "truncated", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { f.Fault("network.interface.dump", "truncated") }},
		{name: "html", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { f.Fault("network.interface.dump", "html") }},
		{name: "http 500", ifaces: []I{wan}, setup: func(f *rpcroutertest.Fake) { f.Fault("network.interface.dump", "http500") }},
		{name: "an object for the list", raw: `{"interface":{"wan":{"up":true}}}`},
		{name: "wrong types", raw: `{"interface":[{"interface":"wan","up":"yes","ipv4-address":[{"address":"203.0.113.7"}],"route":[{"target":"0.0.0.0","mask":"0"}]}]}`},
		{name: "hostile values", raw: `{"interface":[null,{},
			{"interface":"a","up":true,"ipv4-address":[{"address":"198.51.100.1"}],"route":[{"target":"0.0.0.0"}]},
			{"interface":"b","up":true,"ipv4-address":[{"address":"198.51.100.2"}],"route":[{"target":"0.0.0.0/0","mask":0},{"target":"0.0.0.0","mask":8}]},
			{"interface":"c","up":true,"ipv4-address":[],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"d","up":true,"ipv4-address":[null,{"address":"198.51.100.4"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"e","up":true,"ipv4-address":[{"address":"999.0.0.1"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"f","up":true,"ipv4-address":[{"address":"::ffff:198.51.100.6"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"g","up":true,"ipv4-address":[{"address":"0.0.0.0"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"h","up":true,"ipv4-address":[{"address":"127.0.0.1"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"i","up":true,"ipv4-address":[{"address":"198.051.100.9"}],"route":[{"target":"0.0.0.0","mask":0}]}]}`},
		{name: "a string for the address list", raw: `{"interface":[{"interface":"wan","up":true,"ipv4-address":"203.0.113.7","route":[{"target":"0.0.0.0","mask":0}]}]}`},
		{name: "hostile values beside a good one", raw: `{"interface":[
			{"interface":"e","up":true,"ipv4-address":[{"address":"999.0.0.1"}],"route":[{"target":"0.0.0.0","mask":0}]},
			{"interface":"wan","up":true,"metric":-5,"ipv4-address":[{"address":" 203.0.113.7 "}],"route":[{"target":"0.0.0.0","mask":0}]}]}`,
			want: "203.0.113.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			f.SetInterfaces(tc.ifaces...)
			if tc.raw != "" {
				f.Reply("network.interface.dump", "raw:"+tc.raw)
			}
			if tc.setup != nil {
				tc.setup(f)
			}
			res, err := serve(t, f, nil).Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			read := res.(*sources.HostRead)
			if read.Peer.Outside != tc.want {
				t.Errorf("outside %q, want %q", read.Peer.Outside, tc.want)
			}
			if !read.Complete || len(read.Errors) != 0 {
				t.Errorf("complete %v errors %v", read.Complete, read.Errors)
			}
			if got := hostLines(read); got != wantLab {
				t.Errorf("hosts:\n%s\nwant:\n%s", got, wantLab)
			}
		})
	}
}

// A read whose time runs out while it reads the outside address ends as
// any read whose time runs out.
func TestOutsideTimedOut(t *testing.T) {
	f := lab()
	f.Delay = time.Hour
	f.Fault("network.interface.dump", "slow")
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

// An ACL that does not grant the dump is not asked again on every read:
// each refusal costs a second login (the client takes a denial for an
// expired session once).
func TestOutsideDeniedNotAskedEveryRead(t *testing.T) {
	f := lab()
	delete(f.ACL, "network.interface.dump")
	r := serve(t, f, nil)
	for range 3 {
		res, err := r.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if read := res.(*sources.HostRead); !read.Complete || read.Peer.Outside != "" {
			t.Fatalf("read %+v", read)
		}
	}
	if n := f.Count("network.interface.dump"); n != 2 {
		t.Errorf("network.interface.dump asked %d times over three reads, want 2 (the first read and its retry after a new login)", n)
	}
}
