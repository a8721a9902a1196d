package icmpsweep

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// runFake sweeps with fake transports (nil for a family not used).
func runFake(t *testing.T, ctx context.Context, prefixes []netip.Prefix, p Params, f4, f6 *fakeTransport, tweak func(*sweep)) (Result, error) {
	t.Helper()
	ts, warnings, err := plan(prefixes, p)
	if err != nil {
		return Result{}, err
	}
	var c4, c6 transport
	if f4 != nil {
		c4 = f4
	}
	if f6 != nil {
		c6 = f6
	}
	s, err := newSweep(ts, p, c4, c6)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(s)
	}
	res, err := s.run(ctx)
	res.Warnings = append(warnings, res.Warnings...)
	return res, err
}

// planned lists the addresses a plan probes, in order.
func planned(ts []*target) []netip.Addr {
	var out []netip.Addr
	for _, t := range ts {
		for off := t.First; off < t.End; off++ {
			if !t.Skip(off) {
				out = append(out, t.Addr(off))
			}
		}
	}
	return out
}

func TestPlanAddresses(t *testing.T) {
	tests := []struct {
		name     string
		prefixes []string
		want     []string
	}{
		{"ipv4 /30 skips network and broadcast", []string{"192.0.2.4/30"}, []string{"192.0.2.5", "192.0.2.6"}},
		{"ipv4 /31 probes both", []string{"192.0.2.4/31"}, []string{"192.0.2.4", "192.0.2.5"}},
		{"ipv4 /32 probes the one", []string{"192.0.2.9/32"}, []string{"192.0.2.9"}},
		{"host bits are masked", []string{"192.0.2.7/30"}, []string{"192.0.2.5", "192.0.2.6"}},
		{"ipv4 /29 crosses no byte", []string{"10.1.255.248/29"}, []string{"10.1.255.249", "10.1.255.250", "10.1.255.251", "10.1.255.252", "10.1.255.253", "10.1.255.254"}},
		{"carry across bytes", []string{"10.1.0.0/23"}, nil}, // checked by count below
		{"ipv6 /126 skips the subnet-router anycast", []string{"2001:db8::/126"}, []string{"2001:db8::1", "2001:db8::2", "2001:db8::3"}},
		{"ipv6 /127 probes both", []string{"2001:db8::/127"}, []string{"2001:db8::", "2001:db8::1"}},
		{"ipv6 /128", []string{"2001:db8::5/128"}, []string{"2001:db8::5"}},
		{"ipv4-mapped is unmapped", []string{"::ffff:192.0.2.0/126"}, []string{"192.0.2.1", "192.0.2.2"}},
		{"duplicates are probed once", []string{"192.0.2.0/30", "192.0.2.0/30"}, []string{"192.0.2.1", "192.0.2.2"}},
		{"overlap: most specific first, each address once", []string{"192.0.2.0/29", "192.0.2.4/30"},
			[]string{"192.0.2.5", "192.0.2.6", "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}}, // .7: broadcast of the /29
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _, err := plan(mustPrefixes(tt.prefixes...), Params{Rate: 1000, Rounds: 1})
			if err != nil {
				t.Fatal(err)
			}
			got := planned(ts)
			if tt.want == nil {
				if len(got) != 510 || got[0] != netip.MustParseAddr("10.1.0.1") || got[255] != netip.MustParseAddr("10.1.1.0") || got[509] != netip.MustParseAddr("10.1.1.254") {
					t.Fatalf("got %d addresses %v...%v", len(got), got[0], got[len(got)-1])
				}
				return
			}
			if !slices.Equal(got, addrs(tt.want...)) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		prefix string
		want   error
	}{
		{"10.0.0.0/7", ErrPrefixTooLarge},
		{"0.0.0.0/0", ErrPrefixTooLarge},
		{"2001:db8::/64", ErrPrefixTooLarge},
		{"2001:db8::/103", ErrPrefixTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			_, _, err := plan(mustPrefixes(tt.prefix), Params{Rate: 1000, Rounds: 1})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.prefix) {
				t.Errorf("err = %v, want %v naming the prefix", err, tt.want)
			}
		})
	}
	if _, _, err := plan([]netip.Prefix{{}}, Params{Rate: 1, Rounds: 1}); !errors.Is(err, ErrBadParams) {
		t.Errorf("zero prefix: %v", err)
	}
	for _, ok := range []string{"10.0.0.0/8", "2001:db8::/104"} {
		if _, _, err := plan(mustPrefixes(ok), Params{Rate: 1, Rounds: 1}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestPlanWarnsAboutSize(t *testing.T) {
	_, w, err := plan(mustPrefixes("10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/15"), Params{Rate: 1000, Rounds: 2, Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"network 172.16.0.0/15 has 131070 addresses; at 1000 probes/s a sweep takes 4m24s",
		"network 10.0.0.0/8 has 16777214 addresses; at 1000 probes/s a sweep takes 9h19m",
	}
	if !slices.Equal(w, want) {
		t.Errorf("warnings\n%q\nwant\n%q", w, want)
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		p    Params
		want string
	}{
		{Params{Rate: 1, Rounds: 1}, ""},
		{Params{Rate: 0, Rounds: 1}, "rate 0"},
		{Params{Rate: 10, Rounds: 0}, "rounds 0"},
		{Params{Rate: 10, Rounds: 1, Wait: -time.Second}, "wait -1s"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.p), func(t *testing.T) {
			err := tt.p.validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrBadParams with %q", err, tt.want)
			}
		})
	}
}

func TestSweepRounds(t *testing.T) {
	f := newFake(ModeDatagram, false, "192.0.2.1", "192.0.2.5")
	res, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/28"), Params{Rate: 10000, Rounds: 3, Wait: 200 * time.Millisecond}, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := responderIPs(res); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.5"}) {
		t.Fatalf("responders %v", got)
	}
	for _, r := range res.Responders {
		if r.RTT <= 0 || r.Network != netip.MustParsePrefix("192.0.2.0/28") {
			t.Errorf("responder %+v", r)
		}
	}
	sent := f.Sent()
	// Round 1: all 14; rounds 2 and 3: the 12 that did not answer.
	if len(sent) != 14+12+12 || res.ProbesSent != len(sent) {
		t.Fatalf("sent %d probes (ProbesSent %d), want 38", len(sent), res.ProbesSent)
	}
	for _, a := range sent[14:] {
		if a == netip.MustParseAddr("192.0.2.1") || a == netip.MustParseAddr("192.0.2.5") {
			t.Errorf("re-probed %v after it answered", a)
		}
	}
}

func TestSweepBackPressure(t *testing.T) {
	tests := []struct {
		name      string
		failUntil int // attempts that fail (0: always)
		errno     syscall.Errno
		wantSent  int // 6 addresses, then the 4 that did not answer
		wantFound []string
		wantErr   string
	}{
		{"ENOBUFS three times, then sent", 3, syscall.ENOBUFS, 10, []string{"192.0.2.1", "192.0.2.3"}, ""},
		{"EAGAIN twice", 2, syscall.EAGAIN, 10, []string{"192.0.2.1", "192.0.2.3"}, ""},
		{"ENOBUFS forever: dropped and counted", 0, syscall.ENOBUFS, 9, []string{"192.0.2.1"}, "2 probes dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(ModeDatagram, false, "192.0.2.1", "192.0.2.3")
			victim := netip.MustParseAddr("192.0.2.3")
			f.SendErr = func(dst netip.Addr, n int) error {
				if dst == victim && (tt.failUntil == 0 || n <= tt.failUntil) {
					return tt.errno
				}
				return nil
			}
			res, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/29"), Params{Rate: 10000, Rounds: 2, Wait: 100 * time.Millisecond}, f, nil,
				func(s *sweep) { s.pace.GiveUp = 10 * time.Millisecond })
			if err != nil {
				t.Fatal(err)
			}
			if res.ProbesSent != tt.wantSent || len(f.Sent()) != tt.wantSent {
				t.Errorf("ProbesSent %d, accepted %d, want %d", res.ProbesSent, len(f.Sent()), tt.wantSent)
			}
			if got := responderIPs(res); !slices.Equal(got, tt.wantFound) {
				t.Errorf("responders %v, want %v", got, tt.wantFound)
			}
			if tt.wantErr == "" && len(res.Errors) > 0 || tt.wantErr != "" && (len(res.Errors) != 1 || !strings.Contains(res.Errors[0], tt.wantErr)) {
				t.Errorf("errors %q, want %q", res.Errors, tt.wantErr)
			}
		})
	}
}

func TestSweepUnreachable(t *testing.T) {
	f := newFake(ModeDatagram, false, "192.0.2.9")
	dead := netip.MustParsePrefix("198.51.100.0/23")
	f.SendErr = func(dst netip.Addr, n int) error {
		switch {
		case dead.Contains(dst):
			return syscall.ENETUNREACH
		case dst == netip.MustParseAddr("192.0.2.20"):
			return syscall.EHOSTUNREACH
		}
		return nil
	}
	res, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/24", "198.51.100.0/23"), Params{Rate: 1e6, Rounds: 1, Wait: 10 * time.Millisecond}, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := responderIPs(res); !slices.Equal(got, []string{"192.0.2.9"}) {
		t.Errorf("responders %v", got)
	}
	if res.ProbesSent != 253 {
		t.Errorf("ProbesSent %d, want 253", res.ProbesSent)
	}
	want := []string{
		"network 192.0.2.0/24: 1 probes not sent: sendto 192.0.2.20: no route to host",
		"network 198.51.100.0/23: 256 probes not sent: sendto 198.51.100.1: network is unreachable (rest of the network skipped)",
	}
	if !slices.Equal(res.Errors, want) {
		t.Errorf("errors\n%q\nwant\n%q", res.Errors, want)
	}
	n := 0
	for a, c := range f.Attempts() {
		if dead.Contains(a) {
			n += c
		}
	}
	if n != abandonAfter {
		t.Errorf("%d attempts on the unreachable network, want %d", n, abandonAfter)
	}
}

func TestSweepFatalSendError(t *testing.T) {
	f := newFake(ModeDatagram, false)
	f.SendErr = func(netip.Addr, int) error { return syscall.EBADF }
	_, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/29"), Params{Rate: 1000, Rounds: 1}, f, nil, nil)
	if !errors.Is(err, syscall.EBADF) || !strings.Contains(err.Error(), "sendto 192.0.2.1") {
		t.Errorf("err = %v", err)
	}
}

// In raw mode the socket sees every echo reply on the host: only ours
// (identifier and token) count.
func TestSweepRawFiltering(t *testing.T) {
	f := newFake(ModeRaw, false, "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5")
	f.mangle = func(b []byte) {
		icmp := b[20:]
		switch b[20+7] { // low byte of the sequence number = probe order
		case 1: // 192.0.2.2: another process's identifier
			icmp[4] ^= 0xff
		case 2: // 192.0.2.3: another sweep's token
			icmp[8] ^= 0xff
		case 3: // 192.0.2.4: not an echo reply
			icmp[0] = 3
		case 4: // 192.0.2.5: truncated
			copy(b, b[:20+10])
			icmp[0] = 99
		}
	}
	res, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/29"), Params{Rate: 1e6, Rounds: 1, Wait: 50 * time.Millisecond}, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := responderIPs(res); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("responders %v, want only 192.0.2.1", got)
	}
}

func TestSweepBothFamilies(t *testing.T) {
	f4 := newFake(ModeDatagram, false, "192.0.2.2")
	f6 := newFake(ModeDatagram, true, "2001:db8::2")
	res, err := runFake(t, context.Background(), mustPrefixes("2001:db8::/125", "192.0.2.0/29"), Params{Rate: 1e5, Rounds: 2, Wait: 50 * time.Millisecond}, f4, f6, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := responderIPs(res); !slices.Equal(got, []string{"192.0.2.2", "2001:db8::2"}) {
		t.Errorf("responders %v", got)
	}
	if n4, n6 := len(f4.Sent()), len(f6.Sent()); n4 != 6+5 || n6 != 7+6 {
		t.Errorf("sent %d IPv4 and %d IPv6 probes, want 11 and 13", n4, n6)
	}
}

func TestSweepCancel(t *testing.T) {
	f := newFake(ModeDatagram, false)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := runFake(t, ctx, mustPrefixes("192.0.2.0/24"), Params{Rate: 50, Rounds: 2, Wait: time.Hour}, f, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.ProbesSent == 0 || res.ProbesSent >= 254 || res.Finished.IsZero() {
		t.Errorf("partial result: ProbesSent %d, Finished %v", res.ProbesSent, res.Finished)
	}
}

// When every address has answered, the sweep does not sit out Wait.
func TestSweepEndsWhenAllAnswered(t *testing.T) {
	f := newFake(ModeDatagram, false, "192.0.2.1", "192.0.2.2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runFake(t, ctx, mustPrefixes("192.0.2.0/30"), Params{Rate: 1000, Rounds: 5, Wait: time.Hour}, f, nil, nil)
	if err != nil {
		t.Fatalf("err = %v (the sweep waited instead of ending)", err)
	}
	if res.ProbesSent != 2 {
		t.Errorf("ProbesSent %d, want 2", res.ProbesSent)
	}
}

// The sweep keeps one bit per address: sweeping a /16 allocates well under
// a byte per address.
func TestSweepMemoryPerAddress(t *testing.T) {
	f := newFake(ModeDatagram, false)
	f.discard = true
	prefixes := mustPrefixes("10.20.0.0/16")
	run := func() {
		if _, err := runFake(t, context.Background(), prefixes, Params{Rate: 1e9, Rounds: 2}, f, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	const addresses = 65534
	perAddr := float64(after.TotalAlloc-before.TotalAlloc) / addresses
	mallocs := after.Mallocs - before.Mallocs
	t.Logf("sweep of a /16, 2 rounds: %.3f bytes and %d allocations in all (%.5f per address)", perAddr, mallocs, float64(mallocs)/addresses)
	if perAddr > 1 || mallocs > 200 {
		t.Errorf("%.3f bytes per address, %d allocations: the sweep allocates per address", perAddr, mallocs)
	}
}

func TestSweepRecheck(t *testing.T) {
	tests := []struct {
		name    string
		recheck func() (func(netip.Addr) bool, error)
		round2  []string
		warn    string
	}{
		{"only what the predicate keeps", func() (func(netip.Addr) bool, error) {
			return func(a netip.Addr) bool {
				return a == netip.MustParseAddr("192.0.2.3") || a == netip.MustParseAddr("192.0.2.1")
			}, nil
		}, []string{"192.0.2.3"}, ""}, // .1 answered in round 1
		{"nil predicate: all", func() (func(netip.Addr) bool, error) { return nil, nil },
			[]string{"192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"}, ""},
		{"error: all, with a warning", func() (func(netip.Addr) bool, error) { return nil, errors.New("netlink: boom") },
			[]string{"192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"}, "round 2 probes every silent address: netlink: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(ModeDatagram, false, "192.0.2.1")
			res, err := runFake(t, context.Background(), mustPrefixes("192.0.2.0/29"),
				Params{Rate: 1e5, Rounds: 2, Wait: 50 * time.Millisecond, Recheck: tt.recheck}, f, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			sent := f.Sent()
			if !slices.Equal(sent[6:], addrs(tt.round2...)) {
				t.Errorf("round 2 probed %v, want %v", sent[6:], tt.round2)
			}
			if tt.warn == "" && len(res.Warnings) > 0 || tt.warn != "" && !slices.Equal(res.Warnings, []string{tt.warn}) {
				t.Errorf("warnings %q, want %q", res.Warnings, tt.warn)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	est := []struct {
		n    uint64
		p    Params
		want time.Duration
	}{
		{1022, Params{Rate: 1000, Rounds: 2, Wait: 2 * time.Second}, 4044 * time.Millisecond},
		{65534, Params{Rate: 20000, Rounds: 1, Wait: time.Second}, 4276700 * time.Microsecond},
		{254, Params{Rate: 1000, Rounds: 0}, 254 * time.Millisecond},
		{10, Params{}, 0},
	}
	for _, tt := range est {
		if got := Estimate(tt.n, tt.p); got != tt.want {
			t.Errorf("Estimate(%d, %+v) = %v, want %v", tt.n, tt.p, got, tt.want)
		}
	}
	for d, want := range map[time.Duration]string{
		33554*time.Second + 400*time.Millisecond: "9h19m",
		264 * time.Second:                        "4m24s",
		1500 * time.Millisecond:                  "1.5s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
