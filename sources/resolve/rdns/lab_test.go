package rdns_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/resolve/rdns"
)

// TestLab resolves hosts through the lab's dnsmasq, read from the scanner
// namespace's /etc/resolv.conf as in production.
func TestLab(t *testing.T) {
	a := netip.MustParseAddr
	l := lab.New(t, lab.Spec{
		Prefix: netip.MustParsePrefix("10.77.1.0/24"), Scanner: a("10.77.1.2"), DNS: a("10.77.1.3"),
		Hosts: []lab.HostSpec{
			{Name: "alpha", IP: a("10.77.1.10"), DNSName: "alpha.lab"},
			{Name: "beta", IP: a("10.77.1.11")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	alpha, _ := l.Host("alpha")
	beta, _ := l.Host("beta")
	hosts := []*sources.Host{{IP: alpha.IP}, {IP: beta.IP}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := rdns.New(rdns.Options{}).Enrich(ctx, hosts)
	// The lab's dnsmasq has no upstream: it refuses reverse names it does
	// not know (NXDOMAIN with --bogus-priv). Either way beta has no name;
	// a refusal must be counted as beta's failure alone.
	if err != nil && (!errors.Is(err, rdns.ErrLookupsFailed) || !strings.Contains(err.Error(), "1 of 2")) {
		t.Errorf("Enrich: %v", err)
	}
	if got := hosts[0].Names[sources.NameDNS]; got != "alpha.lab" {
		t.Errorf("%v: dns name = %q, want alpha.lab", alpha.IP, got)
	}
	if hosts[1].Named() {
		t.Errorf("%v: named %v, want no name", beta.IP, hosts[1].Names)
	}
}
