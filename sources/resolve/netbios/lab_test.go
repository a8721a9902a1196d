package netbios_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/resolve/netbios"
)

// TestLab asks Samba 4.17's nmbd for its node status from the scanner
// namespace.
func TestLab(t *testing.T) {
	a := netip.MustParseAddr
	l := lab.New(t, lab.Spec{
		Prefix: netip.MustParsePrefix("10.77.3.0/24"), Scanner: a("10.77.3.2"), DNS: a("10.77.3.3"),
		Hosts: []lab.HostSpec{
			{Name: "files", IP: a("10.77.3.10"), NetBIOS: "LABFILES"},
			{Name: "laptop", IP: a("10.77.3.11"), NetBIOS: "LAPTOP-LAB"},
			{Name: "mute", IP: a("10.77.3.12")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	host := func(name string) *sources.Host {
		h, _ := l.Host(name)
		return &sources.Host{IP: h.IP}
	}
	files, laptop, mute := host("files"), host("laptop"), host("mute")
	laptop.SetName(sources.NameMDNS, "laptop.local") // named before: not asked
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := netbios.New(netbios.Options{})
	if err := r.Enrich(ctx, []*sources.Host{files, laptop, mute}); err != nil {
		t.Errorf("Enrich: %v", err)
	}
	if got := files.Names[sources.NameNetBIOS]; got != "LABFILES" {
		t.Errorf("files: netbios name = %q, want LABFILES", got)
	}
	if _, ok := laptop.Names[sources.NameNetBIOS]; ok {
		t.Errorf("laptop was already named but asked: %v", laptop.Names)
	}
	if mute.Named() {
		t.Errorf("mute: named %v", mute.Names)
	}
	st, err := r.Lookup(ctx, laptop.IP)
	if err != nil {
		t.Fatal(err)
	}
	if st.ComputerName() != "LAPTOP-LAB" || st.Workgroup() != "LABGROUP" {
		t.Errorf("Lookup(laptop) = %q in %q, want LAPTOP-LAB in LABGROUP (names %+v)", st.ComputerName(), st.Workgroup(), st.Names)
	}
}
