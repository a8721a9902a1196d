package neighbour

import (
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources/lab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func e(ip string, m string, s State) Entry {
	en := Entry{IP: netip.MustParseAddr(ip), State: s}
	if m != "" {
		en.MAC = mac(m)
	}
	return en
}

func ips(es []Entry) []string {
	out := []string{}
	for _, x := range es {
		out = append(out, x.IP.String()+" "+x.MAC.String()+" "+x.State.String())
	}
	return out
}

func TestPresent(t *testing.T) {
	lan := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/64")}
	tests := []struct {
		name    string
		entries []Entry
		want    []string
	}{
		{"present states count", []Entry{
			e("192.0.2.5", "02:00:00:00:00:05", Stale),
			e("192.0.2.1", "02:00:00:00:00:01", Reachable),
			e("192.0.2.3", "02:00:00:00:00:03", Delay),
			e("192.0.2.4", "02:00:00:00:00:04", Probe),
			e("2001:db8::9", "02:00:00:00:00:09", Reachable),
		}, []string{
			"192.0.2.1 02:00:00:00:00:01 REACHABLE", "192.0.2.3 02:00:00:00:00:03 DELAY",
			"192.0.2.4 02:00:00:00:00:04 PROBE", "192.0.2.5 02:00:00:00:00:05 STALE",
			"2001:db8::9 02:00:00:00:00:09 REACHABLE",
		}},
		{"no evidence: incomplete, failed, none", []Entry{
			e("192.0.2.6", "", Incomplete),
			e("192.0.2.7", "", Failed),
			e("192.0.2.8", "02:00:00:00:00:08", 0),
		}, []string{}},
		{"configuration is not evidence: permanent, noarp", []Entry{
			e("192.0.2.10", "02:00:00:00:00:0a", Permanent),
			e("192.0.2.11", "01:00:5e:00:00:01", NoARP),
		}, []string{}},
		{"a present state without a MAC is ignored", []Entry{
			e("192.0.2.12", "", Reachable),
			e("192.0.2.13", "00:00:00:00:00:00", Stale),
		}, []string{}},
		{"outside the swept prefixes", []Entry{
			e("198.51.100.1", "02:00:00:00:00:01", Reachable),
			e("fe80::1", "02:00:00:00:00:01", Reachable),
		}, []string{}},
		{"listed on two links: the freshest wins", []Entry{
			e("192.0.2.20", "02:00:00:00:00:aa", Stale),
			e("192.0.2.20", "02:00:00:00:00:bb", Reachable),
			e("192.0.2.20", "02:00:00:00:00:cc", Probe),
		}, []string{"192.0.2.20 02:00:00:00:00:bb REACHABLE"}},
		{"ipv4-mapped entries were unmapped by List", []Entry{
			e("192.0.2.30", "02:00:00:00:00:30", Reachable|Permanent),
		}, []string{"192.0.2.30 02:00:00:00:00:30 REACHABLE|PERMANENT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ips(Present(tt.entries, lan))); diff != "" {
				t.Errorf("Present (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMACs(t *testing.T) {
	lan := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	got := MACs([]Entry{
		e("192.0.2.1", "02:00:00:00:00:01", Reachable),
		e("192.0.2.2", "02:00:00:00:00:02", Permanent),
		e("192.0.2.3", "", Incomplete),
		e("192.0.2.4", "01:00:5e:00:00:01", NoARP),
		e("198.51.100.1", "02:00:00:00:00:09", Reachable),
	}, lan)
	want := map[netip.Addr]net.HardwareAddr{
		netip.MustParseAddr("192.0.2.1"): mac("02:00:00:00:00:01"),
		netip.MustParseAddr("192.0.2.2"): mac("02:00:00:00:00:02"),
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("MACs (-want +got):\n%s", diff)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{
		0: "NONE", Reachable: "REACHABLE", Stale | Permanent: "STALE|PERMANENT", 0x300: "0x300",
		Incomplete | 0x100: "INCOMPLETE|0x100",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint16(s), got, want)
		}
	}
}

// TestListInNamespace reads a real table: entries added with ip neigh in a
// fresh namespace come back with their state and MAC.
func TestListInNamespace(t *testing.T) {
	ns := lab.NewNamespace(t)
	if err := lab.IP(ns,
		"link add a0 type veth peer name b0",
		"addr add 192.0.2.1/24 dev a0",
		"addr add 2001:db8::1/64 dev a0 nodad",
		"link set a0 up", "link set b0 up",
		"neigh replace 192.0.2.10 lladdr 02:00:00:00:00:10 dev a0 nud reachable",
		"neigh replace 192.0.2.11 lladdr 02:00:00:00:00:11 dev a0 nud stale",
		"neigh replace 192.0.2.12 lladdr 02:00:00:00:00:12 dev a0 nud permanent",
		"neigh replace 2001:db8::10 lladdr 02:00:00:00:00:20 dev a0 nud reachable",
	); err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		entries, err = List()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lan := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/64")}
	got := ips(Present(entries, lan))
	want := []string{
		"192.0.2.10 02:00:00:00:00:10 REACHABLE", "192.0.2.11 02:00:00:00:00:11 STALE",
		"2001:db8::10 02:00:00:00:00:20 REACHABLE",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Present = %q, want %q (all entries: %q)", got, want, ips(entries))
	}
	if m := MACs(entries, lan); m[netip.MustParseAddr("192.0.2.12")].String() != "02:00:00:00:00:12" {
		t.Errorf("MACs lacks the permanent entry: %v", m)
	}
	for _, en := range entries {
		if en.IP == netip.MustParseAddr("192.0.2.10") && (en.LinkIndex == 0 || en.Confirmed < 0 || en.Confirmed > time.Minute) {
			t.Errorf("entry %+v", en)
		}
	}
}

func TestOnLinkInNamespace(t *testing.T) {
	ns := lab.NewNamespace(t)
	if err := lab.IP(ns,
		"link add a0 type veth peer name b0",
		"link add tun0 type veth peer name tun1",
		"link set tun0 arp off",
		"addr add 192.0.2.1/24 dev a0",
		"addr add 2001:db8::1/64 dev a0 nodad",
		"addr add 198.51.100.1/24 dev tun0",
		"link set a0 up", "link set b0 up", "link set tun0 up", "link set tun1 up",
		"route add 203.0.113.0/24 via 192.0.2.254",
		"route add 224.0.0.0/4 dev a0",
	); err != nil {
		t.Fatal(err)
	}
	var got []netip.Prefix
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		got, err = OnLink()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/64")}
	if !slices.Equal(got, want) {
		t.Errorf("OnLink = %v, want %v (not the routed, NOARP, loopback, multicast or link-local ones)", got, want)
	}
}
