package arpsweep

import (
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sweeptest"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/neighbour"
)

// Links lists up, ARP-using interfaces with their IPv4 addresses, and
// nothing else: not lo, not a NOARP link, not a link that is down, not a
// link without IPv4.
func TestLinks(t *testing.T) {
	ns := lab.NewNamespace(t)
	if err := lab.IP(ns,
		"link add a0 address 02:00:00:00:0a:00 type veth peer name a1",
		"addr add 192.0.2.1/24 dev a0", "addr add 198.51.100.1/25 dev a0", "addr add 2001:db8::1/64 dev a0",
		"link set a0 up", "link set a1 up",
		"link add b0 type veth peer name b1", "addr add 203.0.113.1/24 dev b0", // down
		"link add c0 type veth peer name c1", "addr add 10.9.0.1/24 dev c0", "link set c0 arp off", // NOARP
		"link set c0 up", "link set c1 up",
	); err != nil {
		t.Fatal(err)
	}
	var links []Link
	if err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		links, err = Links()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 {
		t.Fatalf("links %+v, want a0 only", links)
	}
	l := links[0]
	if l.Name != "a0" || l.Index <= 1 || l.MAC.String() != "02:00:00:00:0a:00" ||
		!slices.Equal(l.Addrs, []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("198.51.100.1/25")}) {
		t.Errorf("link %+v", l)
	}
}

// Without CAP_NET_RAW, Open fails with ErrNotPermitted (the caller falls
// back to ICMP), naming the fix.
func TestOpenWithoutPermission(t *testing.T) {
	ns := lab.NewNamespace(t)
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() error {
		restore, err := sweeptest.DropNetRaw()
		if err != nil {
			return err
		}
		defer restore()
		s, err := Open([]Link{{Index: 1, Name: "lo"}})
		if err == nil {
			s.Close()
			return errors.New("Open succeeded without CAP_NET_RAW")
		}
		if !errors.Is(err, ErrNotPermitted) || !errors.Is(err, syscall.EPERM) {
			return errors.New("error does not wrap ErrNotPermitted and EPERM: " + err.Error())
		}
		for _, want := range []string{"CAP_NET_RAW", "setcap cap_net_raw+ep", "on lo", "operation not permitted"} {
			if !strings.Contains(err.Error(), want) {
				return errors.New("error lacks " + want + ": " + err.Error())
			}
		}
		t.Logf("error: %v", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLabARPSweep sweeps the default lab from its scanner namespace:
// exactly the lab's nodes answer, each with its MAC, the host that drops
// ICMP included, the scanner's own address as a local reply; and the
// kernel's neighbour table is left alone.
func TestLabARPSweep(t *testing.T) {
	spec := lab.DefaultSpec()
	l := lab.New(t, spec)
	if !l.InScanner(t) {
		return
	}
	if out, err := exec.Command("ip", "neigh", "flush", "all").CombinedOutput(); err != nil {
		t.Fatalf("ip neigh flush: %v: %s", err, out)
	}
	links, err := Links()
	if err != nil {
		t.Fatal(err)
	}
	tg, ok := TargetFor(links, spec.Prefix)
	if !ok {
		t.Fatalf("%v is not on any of %+v", spec.Prefix, links)
	}
	s, err := Open([]Link{tg.Link})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var (
		mu    sync.Mutex
		found []netip.Addr
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Sweep(ctx, []Target{tg}, Params{Rate: 1000, Rounds: 2, Wait: time.Second, Found: func(r Reply) {
		mu.Lock()
		defer mu.Unlock()
		found = append(found, r.IP)
	}})
	if err != nil {
		t.Fatal(err)
	}

	want := []replyView{
		{spec.Scanner.String(), l.MAC(lab.NodeScanner).String(), spec.Prefix.String(), "eth0 (local)"},
		{spec.DNS.String(), l.MAC(lab.NodeDNS).String(), spec.Prefix.String(), "eth0"},
	}
	for _, h := range spec.Hosts {
		want = append(want, replyView{h.IP.String(), l.MAC(h.Name).String(), spec.Prefix.String(), "eth0"})
	}
	slices.SortFunc(want, func(a, b replyView) int { return netip.MustParseAddr(a.IP).Compare(netip.MustParseAddr(b.IP)) })
	if got := views(res.Replies); !slices.Equal(got, want) {
		t.Errorf("replies\n%v\nwant\n%v", got, want)
	}
	quiet, _ := l.Host("quiet")
	if !quiet.DropICMP || !slices.ContainsFunc(res.Replies, func(r Reply) bool { return r.IP == quiet.IP && r.MAC.String() == "02:42:0a:4d:00:0d" }) {
		t.Errorf("the host that drops ICMP (%v) is missing or has the wrong MAC", quiet.IP)
	}
	mu.Lock()
	slices.SortFunc(found, netip.Addr.Compare)
	if len(found) != len(want) {
		t.Errorf("Found heard of %v", found)
	}
	mu.Unlock()
	// 253 addresses in round one (not our own), the silent ones again.
	if wantSent := 253 + 254 - len(want); res.RequestsSent != wantSent {
		t.Errorf("RequestsSent %d, want %d", res.RequestsSent, wantSent)
	}
	if len(res.Errors) > 0 || len(res.Warnings) > 0 || res.Retries > 0 {
		t.Errorf("errors %q warnings %q retries %d", res.Errors, res.Warnings, res.Retries)
	}
	entries, err := neighbour.List()
	if err != nil {
		t.Fatal(err)
	}
	// Had the sweep asked the kernel, it would have left an entry (failed,
	// incomplete) for every silent address it tried. A lab node that
	// itself sends to the scanner leaves a stale entry for its own
	// address (the kernel learns the sender of an ARP request for one of
	// its addresses), which says nothing about the sweep: those are let
	// be when the machine is slow enough for a responder to talk first.
	nodes := map[string]bool{}
	for _, w := range want {
		nodes[w.IP] = true
	}
	for _, e := range entries {
		if !spec.Prefix.Contains(e.IP) {
			continue
		}
		if !nodes[e.IP.String()] || e.State != neighbour.Stale {
			t.Errorf("neighbour entry %+v: the ARP sweep went through the kernel", e)
		}
	}
	t.Logf("%d replies, %d requests, %d ignored in %v", len(res.Replies), res.RequestsSent, res.Ignored, res.Finished.Sub(res.Started))
}
