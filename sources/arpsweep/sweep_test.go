package arpsweep

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ourMAC = "00:16:3e:4d:00:02"

var eth0 = Link{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("10.77.0.2/24")}}

func targetOn(t testing.TB, l Link, prefix string) Target {
	t.Helper()
	tg, ok := TargetFor([]Link{l}, netip.MustParsePrefix(prefix))
	if !ok {
		t.Fatalf("%s is not on %s", prefix, l.Name)
	}
	return tg
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func runFake(t testing.TB, ctx context.Context, targets []Target, p Params, conns map[int]transport, tweak func(*sweep)) (Result, error) {
	t.Helper()
	ts, err := plan(targets, conns)
	if err != nil {
		return Result{}, err
	}
	s := newSweep(ts, p)
	if tweak != nil {
		tweak(s)
	}
	return s.run(ctx)
}

type replyView struct{ IP, MAC, Network, Interface string }

func views(rs []Reply) []replyView {
	var out []replyView
	for _, r := range rs {
		ifc := r.Interface
		if r.Local {
			ifc += " (local)"
		}
		out = append(out, replyView{r.IP.String(), r.MAC.String(), r.Network.String(), ifc})
	}
	return out
}

// A /24: the link's own address is reported at once, the responders with
// the MACs they answered from; silent addresses are asked Rounds times,
// answered ones once; the network and broadcast addresses never.
func TestSweepFindsResponders(t *testing.T) {
	f := newFakeLink(map[string]string{"10.77.0.10": "00:16:3e:4d:00:0a", "10.77.0.13": "02:42:0a:4d:00:0d"})
	var mu sync.Mutex
	var found []string
	res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.0/24")},
		Params{Rate: 1e5, Rounds: 2, Wait: 50 * time.Millisecond, Found: func(r Reply) {
			mu.Lock()
			defer mu.Unlock()
			found = append(found, r.IP.String()+" "+r.MAC.String())
		}}, map[int]transport{2: f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []replyView{
		{"10.77.0.2", ourMAC, "10.77.0.0/24", "eth0 (local)"},
		{"10.77.0.10", "00:16:3e:4d:00:0a", "10.77.0.0/24", "eth0"},
		{"10.77.0.13", "02:42:0a:4d:00:0d", "10.77.0.0/24", "eth0"},
	}
	if got := views(res.Replies); !slices.Equal(got, want) {
		t.Errorf("replies\n%v\nwant\n%v", got, want)
	}
	// 253 in round one (not our own address), 251 in round two.
	if res.RequestsSent != 253+251 || len(f.Sent()) != res.RequestsSent {
		t.Errorf("RequestsSent %d (fake saw %d), want 504", res.RequestsSent, len(f.Sent()))
	}
	for _, a := range f.Sent() {
		if a == netip.MustParseAddr("10.77.0.0") || a == netip.MustParseAddr("10.77.0.255") || a == netip.MustParseAddr("10.77.0.2") {
			t.Errorf("asked %v", a)
		}
	}
	if at := f.Attempts(); at[netip.MustParseAddr("10.77.0.10")] != 1 || at[netip.MustParseAddr("10.77.0.9")] != 2 {
		t.Errorf("attempts: responder %d, silent %d; want 1 and 2", at[netip.MustParseAddr("10.77.0.10")], at[netip.MustParseAddr("10.77.0.9")])
	}
	slices.Sort(found)
	if want := []string{"10.77.0.10 00:16:3e:4d:00:0a", "10.77.0.13 02:42:0a:4d:00:0d", "10.77.0.2 " + ourMAC}; !slices.Equal(found, want) {
		t.Errorf("Found calls %q, want %q", found, want)
	}
	if res.Ignored != 0 || len(res.Errors) > 0 || len(res.Warnings) > 0 || res.Finished.Before(res.Started) {
		t.Errorf("result %+v", res)
	}
}

// A host that misses the first request is found in round two.
func TestSweepRounds(t *testing.T) {
	f := newFakeLink(map[string]string{"10.77.0.20": "00:16:3e:4d:00:14"})
	f.answerFrom[netip.MustParseAddr("10.77.0.20")] = 2
	for _, rounds := range []int{1, 2} {
		t.Run(fmt.Sprint(rounds), func(t *testing.T) {
			f.ResetAttempts()
			res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.16/29")},
				Params{Rate: 1e5, Rounds: rounds, Wait: 20 * time.Millisecond}, map[int]transport{2: f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			found := len(res.Replies) == 1 && res.Replies[0].IP == netip.MustParseAddr("10.77.0.20")
			if found != (rounds == 2) {
				t.Errorf("rounds %d: replies %v", rounds, views(res.Replies))
			}
		})
	}
}

// The subnet's network and broadcast addresses are not asked; a smaller
// prefix's are, when they are hosts of the subnet.
func TestSweepSubnetEdges(t *testing.T) {
	l := Link{Index: 3, Name: "br0", MAC: mustMAC("02:00:00:00:00:01"), Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/23")}}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"10.0.0.252/30", []string{"10.0.0.252", "10.0.0.253", "10.0.0.254", "10.0.0.255"}}, // hosts of the /23
		{"10.0.1.252/30", []string{"10.0.1.252", "10.0.1.253", "10.0.1.254"}},               // .255 is the /23's broadcast
		{"10.0.0.0/30", []string{"10.0.0.2", "10.0.0.3"}},                                   // .0 the network, .1 ours
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			f := newFakeLink(nil)
			if _, err := runFake(t, context.Background(), []Target{targetOn(t, l, tt.prefix)}, Params{Rate: 1e5, Rounds: 1}, map[int]transport{3: f}, nil); err != nil {
				t.Fatal(err)
			}
			if got := f.Sent(); !slices.Equal(got, addrs(tt.want...)) {
				t.Errorf("asked %v, want %v", got, tt.want)
			}
		})
	}
	// A /31 subnet (RFC 3021) has no network or broadcast address.
	p2p := Link{Index: 4, Name: "p0", MAC: mustMAC("02:00:00:00:00:02"), Addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/31")}}
	f := newFakeLink(map[string]string{"192.0.2.1": "02:00:00:00:00:03"})
	res, err := runFake(t, context.Background(), []Target{targetOn(t, p2p, "192.0.2.0/31")}, Params{Rate: 1e5, Rounds: 1, Wait: 50 * time.Millisecond}, map[int]transport{4: f}, nil)
	if err != nil || len(res.Replies) != 2 || !slices.Equal(f.Sent(), addrs("192.0.2.1")) {
		t.Errorf("/31: %v %v asked %v", err, views(res.Replies), f.Sent())
	}
}

// Overlapping targets ask each address once, under the most specific.
func TestSweepOverlap(t *testing.T) {
	f := newFakeLink(map[string]string{"10.77.0.130": "00:16:3e:00:00:82", "10.77.0.10": "00:16:3e:00:00:0a"})
	res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.0/24"), targetOn(t, eth0, "10.77.0.128/25"), targetOn(t, eth0, "10.77.0.0/24")},
		Params{Rate: 1e5, Rounds: 1, Wait: 50 * time.Millisecond}, map[int]transport{2: f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	seen := map[netip.Addr]bool{}
	for _, a := range sent {
		if seen[a] {
			t.Errorf("%v asked twice", a)
		}
		seen[a] = true
	}
	if len(sent) != 253 {
		t.Errorf("%d requests, want 253", len(sent))
	}
	want := []replyView{
		{"10.77.0.2", ourMAC, "10.77.0.0/24", "eth0 (local)"},
		{"10.77.0.10", "00:16:3e:00:00:0a", "10.77.0.0/24", "eth0"},
		{"10.77.0.130", "00:16:3e:00:00:82", "10.77.0.128/25", "eth0"},
	}
	if got := views(res.Replies); !slices.Equal(got, want) {
		t.Errorf("replies\n%v\nwant\n%v", got, want)
	}
}

// handle records only answers to this sweep's requests.
func TestSweepValidatesReplies(t *testing.T) {
	other := &fakeLink{}
	ts, err := plan([]Target{targetOn(t, eth0, "10.77.0.0/24")}, map[int]transport{2: &fakeLink{}})
	if err != nil {
		t.Fatal(err)
	}
	const host, hostMAC = "10.77.0.10", "00:16:3e:4d:00:0a"
	good := replyFrame(hostMAC, host, ourMAC, "10.77.0.2")
	tests := []struct {
		name string
		conn transport // nil: the target's link
		b    []byte
		pt   uint8
		ok   bool
	}{
		{"answer", nil, good, unix.PACKET_HOST, true},
		{"answer sent to broadcast", nil, frame(opReply, "ff:ff:ff:ff:ff:ff", hostMAC, hostMAC, host, ourMAC, "10.77.0.2"), unix.PACKET_BROADCAST, true},
		{"answer with broadcast target MAC", nil, frame(opReply, ourMAC, hostMAC, hostMAC, host, "ff:ff:ff:ff:ff:ff", "10.77.0.2"), unix.PACKET_HOST, true},
		{"on another link", other, good, unix.PACKET_HOST, false},
		{"looped back (outgoing)", nil, good, unix.PACKET_OUTGOING, false},
		{"seen in promiscuous mode", nil, good, unix.PACKET_OTHERHOST, false},
		{"multicast", nil, good, unix.PACKET_MULTICAST, false},
		{"request", nil, frame(opRequest, "ff:ff:ff:ff:ff:ff", hostMAC, hostMAC, host, "00:00:00:00:00:00", "10.77.0.2"), unix.PACKET_BROADCAST, false},
		{"gratuitous", nil, frame(opReply, "ff:ff:ff:ff:ff:ff", hostMAC, hostMAC, host, "ff:ff:ff:ff:ff:ff", host), unix.PACKET_BROADCAST, false},
		{"to another address", nil, replyFrame(hostMAC, host, ourMAC, "10.77.0.3"), unix.PACKET_HOST, false},
		{"not asked", nil, replyFrame(hostMAC, "10.77.0.11", ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"outside the prefix", nil, replyFrame(hostMAC, "10.77.1.10", ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"the subnet's broadcast", nil, replyFrame(hostMAC, "10.77.0.255", ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"zero sender MAC", nil, frame(opReply, ourMAC, hostMAC, "00:00:00:00:00:00", host, ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"broadcast sender MAC", nil, frame(opReply, ourMAC, hostMAC, "ff:ff:ff:ff:ff:ff", host, ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"multicast sender MAC", nil, frame(opReply, ourMAC, hostMAC, "01:00:5e:00:00:01", host, ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"multicast Ethernet source", nil, frame(opReply, ourMAC, "01:00:5e:00:00:01", hostMAC, host, ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"our own MAC", nil, replyFrame(ourMAC, host, ourMAC, "10.77.0.2"), unix.PACKET_HOST, false},
		{"truncated", nil, good[:30], unix.PACKET_HOST, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, t := range ts {
				clear(t.asked)
				clear(t.answered)
			}
			s := newSweep(ts, Params{Rate: 1, Rounds: 1})
			off, _ := ts[0].Offset(netip.MustParseAddr(host))
			ts[0].asked.Set(off) // .10 was asked, .11 not
			c := tt.conn
			if c == nil {
				c = ts[0].conn
			}
			s.handle(newFrameParser(), c, tt.b, tt.pt)
			if ok := len(s.replies) == 1; ok != tt.ok || s.ignored.Load() != map[bool]int64{true: 0, false: 1}[tt.ok] {
				t.Errorf("recorded %v, ignored %d; want recorded=%v", s.replies, s.ignored.Load(), tt.ok)
			}
			if tt.ok && (s.replies[0].MAC.String() != hostMAC || s.replies[0].IP.String() != host || !ts[0].answered.Has(off)) {
				t.Errorf("recorded %+v", s.replies[0])
			}
		})
	}
}

// An address that answers from two MACs keeps the first, with a warning
// (once); a repeated reply changes nothing.
func TestSweepConflict(t *testing.T) {
	f := newFakeLink(map[string]string{"10.77.0.10": "00:16:3e:4d:00:0a"})
	f.extra = func(dst netip.Addr) []fakeFrame {
		if dst != netip.MustParseAddr("10.77.0.10") {
			return nil
		}
		dup := replyFrame("00:16:3e:4d:00:0a", "10.77.0.10", ourMAC, "10.77.0.2")
		imp := replyFrame("02:00:00:00:00:66", "10.77.0.10", ourMAC, "10.77.0.2")
		return []fakeFrame{{dup, unix.PACKET_HOST}, {imp, unix.PACKET_HOST}, {imp, unix.PACKET_HOST}}
	}
	res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.8/29")}, Params{Rate: 1e5, Rounds: 1, Wait: 50 * time.Millisecond}, map[int]transport{2: f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replies) != 1 || res.Replies[0].MAC.String() != "00:16:3e:4d:00:0a" {
		t.Errorf("replies %v", views(res.Replies))
	}
	want := "10.77.0.10 answered ARP from two MACs, 00:16:3e:4d:00:0a and 02:00:00:00:00:66 (an address conflict or proxy ARP); keeping 00:16:3e:4d:00:0a"
	if !slices.Equal(res.Warnings, []string{want}) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
}

func TestSweepBackPressure(t *testing.T) {
	f := newFakeLink(map[string]string{"10.77.0.9": "00:16:3e:4d:00:09"})
	f.SendErr = func(dst netip.Addr, n int) error {
		if dst == netip.MustParseAddr("10.77.0.9") && n <= 3 {
			return unix.ENOBUFS
		}
		if dst == netip.MustParseAddr("10.77.0.10") {
			return unix.ENOBUFS // never accepted
		}
		return nil
	}
	res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.8/29")}, Params{Rate: 1e5, Rounds: 1, Wait: 50 * time.Millisecond}, map[int]transport{2: f},
		func(s *sweep) { s.pace.GiveUp = 20 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	// .8 to .15 (hosts of the /24): .10 dropped.
	if res.RequestsSent != 7 || len(res.Replies) != 1 || res.Retries < 3 {
		t.Errorf("sent %d, retries %d, replies %v", res.RequestsSent, res.Retries, views(res.Replies))
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "1 ARP requests dropped") {
		t.Errorf("errors %q", res.Errors)
	}
}

// A link that goes down is reported once and the rest of its network
// skipped; another link's network is still swept.
func TestSweepLinkDown(t *testing.T) {
	eth1 := Link{Index: 3, Name: "eth1", MAC: mustMAC("00:16:3e:00:01:01"), Addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24")}}
	down := newFakeLink(nil)
	down.SendErr = func(netip.Addr, int) error { return unix.ENETDOWN }
	up := newFakeLink(map[string]string{"192.0.2.7": "00:16:3e:00:01:07"})
	res, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.0/24"), targetOn(t, eth1, "192.0.2.0/29")},
		Params{Rate: 1e5, Rounds: 2, Wait: 50 * time.Millisecond}, map[int]transport{2: down, 3: up}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "network 10.77.0.0/24: 1 ARP requests not sent on eth0: network is down (rest of the network skipped)"; !slices.Equal(res.Errors, []string{want}) {
		t.Errorf("errors %q, want %q", res.Errors, want)
	}
	if got := views(res.Replies); len(got) != 3 || got[2].IP != "192.0.2.7" {
		t.Errorf("replies %v", got)
	}
}

func TestSweepFatalSendError(t *testing.T) {
	f := newFakeLink(nil)
	f.SendErr = func(netip.Addr, int) error { return unix.EBADF }
	_, err := runFake(t, context.Background(), []Target{targetOn(t, eth0, "10.77.0.0/24")}, Params{Rate: 1e5, Rounds: 1}, map[int]transport{2: f}, nil)
	if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "arpsweep: send on eth0") {
		t.Errorf("err = %v", err)
	}
}

func TestSweepCancel(t *testing.T) {
	f := newFakeLink(nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := runFake(t, ctx, []Target{targetOn(t, eth0, "10.77.0.0/24")}, Params{Rate: 50, Rounds: 2, Wait: time.Hour}, map[int]transport{2: f}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.RequestsSent == 0 || res.RequestsSent >= 253 || res.Finished.IsZero() || len(res.Replies) != 1 {
		t.Errorf("partial result: sent %d, finished %v, replies %v", res.RequestsSent, res.Finished, views(res.Replies))
	}
}

// When every address has answered, the sweep does not sit out Wait.
func TestSweepEndsWhenAllAnswered(t *testing.T) {
	l := Link{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/30")}}
	f := newFakeLink(map[string]string{"192.0.2.2": "00:16:3e:00:00:02"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runFake(t, ctx, []Target{targetOn(t, l, "192.0.2.0/30")}, Params{Rate: 1000, Rounds: 5, Wait: time.Hour}, map[int]transport{2: f}, nil)
	if err != nil {
		t.Fatalf("err = %v (the sweep waited instead of ending)", err)
	}
	if res.RequestsSent != 1 || len(res.Replies) != 2 {
		t.Errorf("sent %d, replies %v", res.RequestsSent, views(res.Replies))
	}
}

func TestPlanErrors(t *testing.T) {
	conns := map[int]transport{2: &fakeLink{}}
	good := targetOn(t, eth0, "10.77.0.0/24")
	mod := func(f func(*Target)) Target { tg := good; f(&tg); return tg }
	tests := []struct {
		name string
		tg   Target
		want error
		msg  string
	}{
		{"IPv6", mod(func(tg *Target) { tg.Prefix = netip.MustParsePrefix("2001:db8::/64") }), ErrBadTarget, "not IPv4"},
		{"invalid", mod(func(tg *Target) { tg.Prefix = netip.Prefix{} }), ErrBadTarget, "invalid prefix"},
		{"too large", mod(func(tg *Target) {
			tg.Prefix = netip.MustParsePrefix("10.0.0.0/7")
			tg.Source = netip.MustParsePrefix("10.0.0.1/6")
		}), ErrPrefixTooLarge, "2^25 addresses"},
		{"outside the subnet", mod(func(tg *Target) { tg.Prefix = netip.MustParsePrefix("10.77.0.0/23") }), ErrBadTarget, "not inside the subnet of the source address 10.77.0.2/24"},
		{"no source", mod(func(tg *Target) { tg.Source = netip.Prefix{} }), ErrBadTarget, "source address"},
		{"no MAC", mod(func(tg *Target) { tg.Link.MAC = nil }), ErrBadTarget, `interface "eth0" has no 48-bit MAC`},
		{"link not opened", mod(func(tg *Target) { tg.Link.Index = 9 }), ErrBadTarget, `interface "eth0" (index 9) was not opened`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan([]Target{good, tt.tg}, conns)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want %v with %q", err, tt.want, tt.msg)
			}
		})
	}
	// An IPv4-mapped prefix is unmapped.
	m := mod(func(tg *Target) { tg.Prefix = netip.MustParsePrefix("::ffff:10.77.0.0/120") })
	if ts, err := plan([]Target{m}, conns); err != nil || ts[0].Prefix != netip.MustParsePrefix("10.77.0.0/24") {
		t.Errorf("mapped prefix: %v", err)
	}
}

func TestParamsAndClosed(t *testing.T) {
	s := &Sweeper{conns: map[int]transport{2: &fakeLink{}}}
	_, err := s.Sweep(context.Background(), nil, Params{Rate: 0, Rounds: -1, Wait: -time.Second})
	for _, want := range []string{"rate 0", "rounds -1", "wait -1s"} {
		if !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want ErrBadParams with %q", err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(context.Background(), []Target{targetOn(t, eth0, "10.77.0.0/24")}, Params{Rate: 1, Rounds: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestTargetFor(t *testing.T) {
	links := []Link{
		{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("10.77.0.2/22"), netip.MustParsePrefix("192.168.7.1/24")}},
		{Index: 3, Name: "wlan0", MAC: mustMAC("02:00:00:00:00:03"), Addrs: []netip.Prefix{netip.MustParsePrefix("172.16.5.9/16"), netip.MustParsePrefix("198.51.100.7/32")}},
	}
	tests := []struct {
		prefix, link, source string
	}{
		{"10.77.0.0/22", "eth0", "10.77.0.2/22"},
		{"10.77.2.0/24", "eth0", "10.77.0.2/22"}, // inside the subnet
		{"10.77.3.7/32", "eth0", "10.77.0.2/22"},
		{"10.77.0.5/22", "eth0", "10.77.0.2/22"}, // masked
		{"192.168.7.0/24", "eth0", "192.168.7.1/24"},
		{"172.16.200.0/24", "wlan0", "172.16.5.9/16"},
		{"10.77.0.0/21", "", ""},    // only partly on eth0
		{"10.78.0.0/24", "", ""},    // routed
		{"198.51.100.7/32", "", ""}, // a /32 address has no neighbours
		{"2001:db8::/64", "", ""},   // IPv6: no ARP
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			tg, ok := TargetFor(links, netip.MustParsePrefix(tt.prefix))
			if ok != (tt.link != "") || ok && (tg.Link.Name != tt.link || tg.Source.String() != tt.source || tg.Prefix != netip.MustParsePrefix(tt.prefix).Masked()) {
				t.Errorf("TargetFor = %+v, %v; want %s from %s", tg, ok, tt.link, tt.source)
			}
		})
	}
}

// BenchmarkSweepFake measures the sweep engine alone (fake link that
// discards requests, no pacing): time and allocations per address of a
// /16.
func BenchmarkSweepFake(b *testing.B) {
	f := newFakeLink(nil)
	f.discard = true
	l := Link{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("10.20.0.1/16")}}
	tg := targetOn(b, l, "10.20.0.0/16")
	p := Params{Rate: 1e9, Rounds: 1}
	conns := map[int]transport{2: f}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runFake(b, context.Background(), []Target{tg}, p, conns, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*65534), "ns/addr")
}

// BenchmarkHandleReply measures the receive path alone: one ARP reply
// (a repeat answer from a recorded responder: parsed, matched, nothing
// new to keep) and one stray frame (an IPv4 EtherType: ignored) per
// iteration.
func BenchmarkHandleReply(b *testing.B) {
	f := newFakeLink(nil)
	l := Link{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("10.20.0.1/16")}}
	ts, err := plan([]Target{targetOn(b, l, "10.20.0.0/16")}, map[int]transport{2: f})
	if err != nil {
		b.Fatal(err)
	}
	s := newSweep(ts, Params{Rate: 1e9, Rounds: 1})
	t := ts[0]
	off, ok := t.Offset(netip.MustParseAddr("10.20.3.4"))
	if !ok {
		b.Fatal("no offset")
	}
	t.asked.Set(off)
	reply := replyFrame("02:42:0a:14:03:04", "10.20.3.4", ourMAC, "10.20.0.1")
	stray := slices.Clone(reply)
	stray[12], stray[13] = 0x08, 0x00
	fp := newFrameParser()
	s.handle(fp, f, reply, unix.PACKET_HOST)
	if len(s.replies) != 1 {
		b.Fatalf("the reply was not recorded: %+v", s.replies)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.handle(fp, f, reply, unix.PACKET_HOST)
		s.handle(fp, f, stray, unix.PACKET_HOST)
	}
	if len(s.replies) != 1 || s.ignored.Load() != int64(b.N) {
		b.Fatalf("replies %d, ignored %d, want 1 and %d", len(s.replies), s.ignored.Load(), b.N)
	}
}

// The parser's MACs alias the receive buffer, which the reader reuses:
// a recorded reply keeps its own copy.
func TestRecordedMACOutlivesTheBuffer(t *testing.T) {
	f := newFakeLink(nil)
	l := Link{Index: 2, Name: "eth0", MAC: mustMAC(ourMAC), Addrs: []netip.Prefix{netip.MustParsePrefix("10.20.0.1/24")}}
	ts, err := plan([]Target{targetOn(t, l, "10.20.0.0/24")}, map[int]transport{2: f})
	if err != nil {
		t.Fatal(err)
	}
	s := newSweep(ts, Params{Rate: 1, Rounds: 1})
	off, _ := ts[0].Offset(netip.MustParseAddr("10.20.0.7"))
	ts[0].asked.Set(off)
	buf := replyFrame("02:42:0a:14:00:07", "10.20.0.7", ourMAC, "10.20.0.1")
	s.handle(newFrameParser(), f, buf, unix.PACKET_HOST)
	for i := range buf {
		buf[i] = 0xaa // the next frame read into the buffer
	}
	if len(s.replies) != 1 || s.replies[0].MAC.String() != "02:42:0a:14:00:07" {
		t.Fatalf("recorded %+v", s.replies)
	}
}
