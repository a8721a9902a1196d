package icmpsweep

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sweeptest"
	"github.com/jocasta/jocasta/sources/lab"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("icmpsweep: raw ICMP sockets need root (CAP_NET_RAW)")
		}
		t.Skip("SKIPPING: raw ICMP sockets need root (CAP_NET_RAW)")
	}
}

func mustPrefixes(ss ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range ss {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

func responderIPs(r Result) []string {
	var out []string
	for _, x := range r.Responders {
		out = append(out, x.IP.String())
	}
	return out
}

// Loopback: every address of 127.0.0.0/8 is local and answers.
func TestSweepLoopbackRaw(t *testing.T) {
	needRoot(t)
	p, err := Open(Options{Mode: ModeRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != ModeRaw {
		t.Fatalf("mode %s", p.Mode())
	}
	checkLoopbackSweep(t, p, "127.81.7.0/28", 14)
}

func checkLoopbackSweep(t *testing.T, p *Pinger, prefix string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.Sweep(ctx, mustPrefixes(prefix), Params{Rate: 1000, Rounds: 2, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pr := netip.MustParsePrefix(prefix)
	if len(res.Responders) != want {
		t.Fatalf("%d responders %v, want %d", len(res.Responders), responderIPs(res), want)
	}
	for _, r := range res.Responders {
		if !pr.Contains(r.IP) || r.Network != pr || r.RTT <= 0 || r.RTT > 5*time.Second {
			t.Errorf("responder %+v", r)
		}
	}
	if res.ProbesSent != want {
		t.Errorf("ProbesSent = %d, want %d (one round: every address answered)", res.ProbesSent, want)
	}
	if len(res.Errors) != 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	if res.Finished.Before(res.Started) {
		t.Errorf("finished %v before started %v", res.Finished, res.Started)
	}
}

// The unprivileged ping socket, in a namespace whose ping_group_range
// lets root's group in (a new namespace starts with "1 0": nobody).
func TestSweepLoopbackDatagram(t *testing.T) {
	ns := lab.NewNamespace(t)
	if err := lab.Sysctl(ns, "net.ipv4.ping_group_range", "0 2147483647"); err != nil {
		t.Fatal(err)
	}
	var p *Pinger
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		p, err = Open(Options{IPv4: true, IPv6: true, Mode: ModeDatagram})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != ModeDatagram {
		t.Fatalf("mode %s", p.Mode())
	}
	checkLoopbackSweep(t, p, "127.0.0.0/28", 14)
	checkLoopbackSweep(t, p, "::1/128", 1)
}

func TestSweepLoopbackIPv6Raw(t *testing.T) {
	ns := lab.NewNamespace(t)
	var p *Pinger
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		p, err = Open(Options{IPv6: true, Mode: ModeRaw})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	checkLoopbackSweep(t, p, "::1/128", 1)
	// An IPv4 prefix needs the IPv4 socket this Pinger lacks.
	if _, err := p.Sweep(context.Background(), mustPrefixes("127.0.0.0/30"), Params{Rate: 10, Rounds: 1}); !errors.Is(err, ErrNoSocket) {
		t.Errorf("IPv4 sweep on an IPv6 pinger: %v, want ErrNoSocket", err)
	}
}

// Without CAP_NET_RAW and outside ping_group_range, Open names both fixes.
func TestOpenWithoutPermission(t *testing.T) {
	ns := lab.NewNamespace(t) // ping_group_range "1 0"
	err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() error {
		restore, err := sweeptest.DropNetRaw()
		if err != nil {
			return err
		}
		defer restore()
		p, err := Open(Options{})
		if err == nil {
			p.Close()
			return errors.New("Open succeeded without permission")
		}
		if !errors.Is(err, ErrNoICMP) {
			return err
		}
		for _, want := range []string{`sysctl -w net.ipv4.ping_group_range="0 2147483647"`, "CAP_NET_RAW", "setcap cap_net_raw+ep",
			"datagram: socket: permission denied", "raw: socket: operation not permitted"} {
			if !strings.Contains(err.Error(), want) {
				return errors.New("error lacks " + want + ": " + err.Error())
			}
		}
		if !errors.Is(err, syscall.EACCES) || !errors.Is(err, syscall.EPERM) || strings.Contains(err.Error(), "\n") {
			return errors.New("error does not wrap EACCES and EPERM on one line: " + err.Error())
		}
		t.Logf("error: %v", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A network with no route is reported once and skipped; the rest of the
// sweep goes on.
func TestSweepUnreachableNetwork(t *testing.T) {
	ns := lab.NewNamespace(t) // only lo: 198.51.100.0/24 has no route
	var p *Pinger
	if err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
		p, err = Open(Options{Mode: ModeRaw})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.Sweep(ctx, mustPrefixes("198.51.100.0/23", "127.0.0.0/30"), Params{Rate: 20000, Rounds: 2, Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := responderIPs(res); len(got) != 2 || got[0] != "127.0.0.1" || got[1] != "127.0.0.2" {
		t.Errorf("responders %v", got)
	}
	want := "network 198.51.100.0/23: 256 probes not sent: sendto 198.51.100.1: network is unreachable (rest of the network skipped)"
	if len(res.Errors) != 1 || res.Errors[0] != want {
		t.Errorf("errors %q, want %q", res.Errors, want)
	}
	if res.ProbesSent != 2 {
		t.Errorf("ProbesSent %d, want 2", res.ProbesSent)
	}
}
