package lab_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources/lab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLabBuildAndTearDown(t *testing.T) {
	lab.Require(t)
	spec := lab.DefaultSpec()
	l, err := lab.Build(spec, lab.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = l.Close()
		}
	})
	names := make([]string, 0, len(l.NS))
	for _, ns := range l.NS {
		names = append(names, ns)
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			t.Errorf("namespace %s missing: %v", ns, err)
		}
	}
	if got := len(names); got != len(spec.Hosts)+3 {
		t.Errorf("got %d namespaces, want %d", got, len(spec.Hosts)+3)
	}
	// The lab has no link into this namespace: no interface here carries
	// a lab address.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && spec.Prefix.Contains(p.Addr()) {
			t.Errorf("root namespace has lab address %v", a)
		}
	}
	out, err := l.Exec(lab.NodeScanner, "ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "\n"); n != 2 {
		t.Errorf("scanner has %d links, want lo and eth0:\n%s", n, out)
	}
	if got, want := l.MAC("quiet").String(), "02:42:0a:4d:00:0d"; got != want {
		t.Errorf("quiet MAC = %s, want %s", got, want)
	}
	out, err = l.Exec("quiet", "ip", "-o", "link", "show", "eth0")
	if err != nil || !strings.Contains(string(out), "02:42:0a:4d:00:0d") {
		t.Errorf("quiet's eth0 lacks its MAC: %s %v", out, err)
	}
	out, err = l.Exec("quiet", "cat", "/proc/sys/net/ipv4/icmp_echo_ignore_all")
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("quiet does not drop ICMP: %q %v", out, err)
	}
	out, err = l.Exec(lab.NodeScanner, "cat", "/proc/sys/net/ipv4/ping_group_range")
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != "0 2147483647" {
		t.Errorf("scanner ping_group_range = %q %v", out, err)
	}

	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closed = true
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if _, err := os.Stat(filepath.Join("/etc/netns", l.ScannerNS())); err == nil {
		t.Errorf("/etc/netns/%s left behind", l.ScannerNS())
	}
	if _, err := os.Stat(l.Dir); err == nil {
		t.Errorf("%s left behind", l.Dir)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestLabInScanner checks the re-exec pattern: the body runs in the
// scanner namespace, resolves through the lab's dnsmasq and reaches hosts.
func TestLabInScanner(t *testing.T) {
	l := lab.New(t, lab.DefaultSpec())
	if !l.InScanner(t) {
		return
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"eth0", "lo"}) {
		t.Fatalf("interfaces %v: not in the scanner namespace", names)
	}
	printer, _ := l.Host("printer")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true}
	got, err := r.LookupAddr(ctx, printer.IP.String())
	if err != nil || !slices.Contains(got, "printer.lab.") {
		t.Errorf("reverse lookup of %v = %v, %v; want printer.lab.", printer.IP, got, err)
	}
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(printer.IP, 631).String(), 2*time.Second)
	if err != nil {
		t.Fatalf("connect to printer:631: %v", err)
	}
	c.Close()

	// Move works from inside too and keeps the MAC.
	laptop, _ := l.Host("laptop")
	newIP := netip.MustParseAddr("10.77.0.99")
	l.Move(t, "laptop", newIP)
	out, err := l.Exec("laptop", "ip", "-o", "-4", "addr", "show", "eth0")
	if err != nil || !strings.Contains(string(out), newIP.String()+"/24") || strings.Contains(string(out), laptop.IP.String()+"/") {
		t.Errorf("after move: %s %v", out, err)
	}
	if h, _ := l.Host("laptop"); h.IP != newIP {
		t.Errorf("Host(laptop).IP = %v, want %v", h.IP, newIP)
	}
}
