package config

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func ipnet(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestIPv4Prefixes(t *testing.T) {
	up := net.FlagUp | net.FlagBroadcast
	in := []ifaceAddrs{
		{flags: net.FlagUp | net.FlagLoopback, addrs: []net.Addr{ipnet("127.0.0.1/8")}},
		{flags: up, addrs: []net.Addr{ipnet("192.168.1.23/24"), ipnet("fe80::1/64"), ipnet("2001:db8::5/64"), ipnet("169.254.3.4/16")}},
		{flags: up, addrs: []net.Addr{ipnet("10.0.0.7/8"), ipnet("192.168.1.99/24")}}, // duplicate network
		{flags: net.FlagBroadcast, addrs: []net.Addr{ipnet("172.16.0.1/12")}},         // down
		{flags: up, addrs: []net.Addr{&net.IPNet{IP: net.ParseIP("10.9.8.7"), Mask: net.CIDRMask(120, 128)}}},
		{flags: up, addrs: []net.Addr{&net.IPAddr{IP: net.ParseIP("10.1.1.1")}}},
		{flags: up, addrs: []net.Addr{ipnet("100.64.0.1/32")}},
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("10.9.8.0/24"),
		netip.MustParsePrefix("100.64.0.1/32"),
		netip.MustParsePrefix("192.168.1.0/24"),
	}
	got := ipv4Prefixes(in)
	if diff := cmp.Diff(want, got, cmpNet...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLocalIPv4Prefixes reads real interfaces in a network namespace made for
// the test: a veth pair with both ends inside it (the kernel here has no
// dummy links), one end up with two IPv4 networks, a link-local and an IPv6
// address, the other down with a third network.
func TestLocalIPv4Prefixes(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestLocalIPv4Prefixes needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) to create a network namespace, and CI=true")
		}
		t.Skip("SKIPPED: TestLocalIPv4Prefixes needs root to create a network namespace; run as root (CI=true makes this a failure)")
	}
	type result struct {
		prefixes []netip.Prefix
		err      error
		setup    error
	}
	done := make(chan result, 1)
	go func() {
		// The thread enters a new namespace and is never unlocked, so it
		// ends with this goroutine instead of returning to the pool.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			done <- result{setup: err}
			return
		}
		defer ns.Close()
		if err := setupLinks(); err != nil {
			done <- result{setup: err}
			return
		}
		p, err := LocalIPv4Prefixes()
		done <- result{prefixes: p, err: err}
	}()
	r := <-done
	if r.setup != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespace setup: %v", r.setup)
		}
		t.Skipf("SKIPPED: cannot set up a network namespace here: %v", r.setup)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/25")}
	if diff := cmp.Diff(want, r.prefixes, cmpNet...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func setupLinks() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "jv0"}, PeerName: "jv1"}
	if err := netlink.LinkAdd(veth); err != nil {
		return err
	}
	for _, l := range []struct {
		name  string
		up    bool
		addrs []string
	}{
		{"jv0", true, []string{"192.0.2.10/24", "198.51.100.7/25", "169.254.1.1/16", "2001:db8::1/64"}},
		{"jv1", false, []string{"203.0.113.1/24"}},
	} {
		link, err := netlink.LinkByName(l.name)
		if err != nil {
			return err
		}
		for _, a := range l.addrs {
			addr, err := netlink.ParseAddr(a)
			if err != nil {
				return err
			}
			if err := netlink.AddrAdd(link, addr); err != nil {
				return err
			}
		}
		if l.up {
			if err := netlink.LinkSetUp(link); err != nil {
				return err
			}
		}
	}
	return nil
}
