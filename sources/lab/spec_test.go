package lab

import (
	"net/netip"
	"strings"
	"testing"
)

func TestDefaultSpecIsValid(t *testing.T) {
	if err := DefaultSpec().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSpecValidate(t *testing.T) {
	a := netip.MustParseAddr
	base := func() Spec {
		return Spec{Prefix: netip.MustParsePrefix("10.77.0.0/24"), Scanner: a("10.77.0.2"), DNS: a("10.77.0.3"),
			Hosts: []HostSpec{{Name: "h1", IP: a("10.77.0.10")}}}
	}
	tests := []struct {
		name   string
		change func(*Spec)
		want   []string
	}{
		{"ipv6 prefix", func(s *Spec) { s.Prefix = netip.MustParsePrefix("2001:db8::/64") }, []string{"want an IPv4 prefix"}},
		{"host bits", func(s *Spec) { s.Prefix = netip.MustParsePrefix("10.77.0.1/24") }, []string{"host bits set"}},
		{"tiny", func(s *Spec) { s.Prefix = netip.MustParsePrefix("10.77.0.0/30") }, []string{"too small"}},
		{"outside", func(s *Spec) { s.Hosts[0].IP = a("10.78.0.1") }, []string{"not inside"}},
		{"broadcast", func(s *Spec) { s.Hosts[0].IP = a("10.77.0.255") }, []string{"network or broadcast"}},
		{"same address", func(s *Spec) { s.Hosts[0].IP = a("10.77.0.2") }, []string{"already used by scanner"}},
		{"reserved and bad names", func(s *Spec) {
			s.Hosts = append(s.Hosts, HostSpec{Name: "dns", IP: a("10.77.0.11")}, HostSpec{Name: "Bad_Name", IP: a("10.77.0.12")},
				HostSpec{Name: "h1", IP: a("10.77.0.13")})
		}, []string{`"dns" is reserved`, `name "Bad_Name"`, `"h1" used twice`}},
		{"multicast MAC", func(s *Spec) { s.Hosts[0].MAC = "01:00:5e:00:00:01" }, []string{"want a unicast 48-bit MAC"}},
		{"bad names for responders", func(s *Spec) {
			s.Hosts[0].DNSName = "bad..name"
			s.Hosts[0].NetBIOS = "lowercase"
			s.Hosts[0].UPnP = "a<b"
			s.Hosts[0].DNSSD = &Service{Type: "http", Name: "", Port: 0}
		}, []string{"DNS name", "NetBIOS name", "UPnP name", "DNS-SD type", "DNS-SD instance name", "DNS-SD port 0"}},
		{"ports", func(s *Spec) { s.Hosts[0].TCPPorts = []int{0, 22, 22, 8200}; s.Hosts[0].UPnP = "TV" }, []string{"TCP port 0", "TCP port 22 given twice", "TCP port 8200 given twice"}},
		{"mDNS names collide", func(s *Spec) {
			s.Hosts[0].MDNSName = "box"
			s.Hosts = append(s.Hosts, HostSpec{Name: "h2", IP: a("10.77.0.11"), MDNSName: "box"})
		}, []string{`mDNS name "box" used twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.change(&s)
			err := s.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestRunPattern(t *testing.T) {
	for in, want := range map[string]string{
		"TestLabSweep":        "^TestLabSweep$",
		"TestX/sub_case(1)":   `^TestX$/^sub_case\(1\)$`,
		"TestA/b.c/d+e":       `^TestA$/^b\.c$/^d\+e$`,
		"TestLabMove#01/x[y]": `^TestLabMove#01$/^x\[y\]$`,
	} {
		if got := runPattern(in); got != want {
			t.Errorf("runPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLastAddrAndMAC(t *testing.T) {
	if got := lastAddr(netip.MustParsePrefix("10.77.0.0/22")); got != netip.MustParseAddr("10.77.3.255") {
		t.Errorf("lastAddr = %v", got)
	}
	if got := defaultMAC(netip.MustParseAddr("10.77.1.20")); got != "00:16:3e:4d:01:14" {
		t.Errorf("defaultMAC = %v", got)
	}
}
