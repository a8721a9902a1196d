package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
)

// Service is one DNS-SD service a lab host publishes through avahi-daemon.
type Service struct {
	Type string // such as "_http._tcp"
	Name string // instance name, such as "Kitchen Printer"
	Port int
}

// HostSpec describes one lab host: a network namespace on the lab bridge
// and the responders started in it.
type HostSpec struct {
	// Name is short (letters, digits, '-'; at most 12), also the suffix of
	// the host's namespace. "scanner", "dns" and "br" are reserved.
	Name string
	// IP is the host's address inside Spec.Prefix.
	IP netip.Addr
	// MAC is an optional fixed MAC ("02:..." is locally administered).
	// Empty: 00:16:3e followed by the last three bytes of IP (universally
	// administered, so the one host given a "02:" MAC stands out).
	MAC string
	// DropICMP makes the host ignore ICMP echo requests
	// (net.ipv4.icmp_echo_ignore_all=1 in its namespace); it still
	// answers ARP.
	DropICMP bool
	// DNSName is an A and PTR record ("printer.lab") served by the lab's
	// dnsmasq.
	DNSName string
	// MDNSName is the avahi-daemon host name (published as name.local with
	// A and reverse PTR records).
	MDNSName string
	// DNSSD is one service avahi-daemon publishes for the host. Without
	// MDNSName, avahi uses Name as its host name.
	DNSSD *Service
	// NetBIOS is the nmbd NetBIOS name (upper case, at most 15 bytes).
	NetBIOS string
	// UPnP is the friendly name of a minidlna server on port 8200 (SSDP on
	// 239.255.255.250:1900, description at http://IP:8200/rootDesc.xml).
	UPnP string
	// TCPPorts are plain TCP listeners that accept and close.
	TCPPorts []int
}

// Spec describes a whole lab.
type Spec struct {
	// Prefix is the lab's IPv4 network, shared by every namespace.
	Prefix netip.Prefix
	// Scanner is the address of the scanner namespace.
	Scanner netip.Addr
	// DNS is the address of the namespace running dnsmasq.
	DNS   netip.Addr
	Hosts []HostSpec
}

// UPnPPort is where minidlna serves its description.
const UPnPPort = 8200

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,11}$`)

// Validate reports every problem in the spec at once.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("lab: spec: "+format, args...)) }
	if !s.Prefix.IsValid() || !s.Prefix.Addr().Is4() {
		bad("prefix %v: want an IPv4 prefix such as 10.77.0.0/24", s.Prefix)
		return errors.Join(errs...)
	}
	if s.Prefix.Bits() > 29 {
		bad("prefix %v: too small for a lab (want /29 or shorter)", s.Prefix)
	}
	if s.Prefix != s.Prefix.Masked() {
		bad("prefix %v has host bits set; want %v", s.Prefix, s.Prefix.Masked())
	}
	used := map[netip.Addr]string{}
	addr := func(who string, a netip.Addr) {
		switch {
		case !a.Is4() || !s.Prefix.Contains(a):
			bad("%s: address %v is not inside %v", who, a, s.Prefix)
		case a == s.Prefix.Masked().Addr() || a == lastAddr(s.Prefix):
			bad("%s: address %v is the network or broadcast address of %v", who, a, s.Prefix)
		case used[a] != "":
			bad("%s: address %v already used by %s", who, a, used[a])
		default:
			used[a] = who
		}
	}
	addr("scanner", s.Scanner)
	addr("dns", s.DNS)
	names := map[string]bool{}
	mdns := map[string]bool{}
	for i, h := range s.Hosts {
		who := fmt.Sprintf("host %d (%s)", i, h.Name)
		if !nameRE.MatchString(h.Name) {
			bad("%s: name %q: want 1-12 of a-z, 0-9, '-'", who, h.Name)
		}
		if h.Name == "scanner" || h.Name == "dns" || h.Name == "br" {
			bad("%s: name %q is reserved", who, h.Name)
		}
		if names[h.Name] {
			bad("%s: name %q used twice", who, h.Name)
		}
		names[h.Name] = true
		addr(who, h.IP)
		if h.MAC != "" {
			m, err := net.ParseMAC(h.MAC)
			if err != nil || len(m) != 6 || m[0]&1 != 0 {
				bad("%s: MAC %q: want a unicast 48-bit MAC such as 02:00:00:00:00:01", who, h.MAC)
			}
		}
		if h.DNSName != "" && !validDNSName(h.DNSName) {
			bad("%s: DNS name %q is not a valid name", who, h.DNSName)
		}
		host := h.avahiHostName()
		if h.MDNSName != "" || h.DNSSD != nil {
			if !nameRE.MatchString(host) && !validDNSLabel(host) {
				bad("%s: mDNS name %q: want one DNS label", who, host)
			}
			if mdns[host] {
				bad("%s: mDNS name %q used twice (avahi would rename one)", who, host)
			}
			mdns[host] = true
		}
		if d := h.DNSSD; d != nil {
			if !strings.HasPrefix(d.Type, "_") || !(strings.HasSuffix(d.Type, "._tcp") || strings.HasSuffix(d.Type, "._udp")) {
				bad("%s: DNS-SD type %q: want _name._tcp or _name._udp", who, d.Type)
			}
			if d.Name == "" || strings.ContainsAny(d.Name, "<>&") {
				bad("%s: DNS-SD instance name %q: want non-empty text without <, > or &", who, d.Name)
			}
			if d.Port < 1 || d.Port > 65535 {
				bad("%s: DNS-SD port %d out of range 1-65535", who, d.Port)
			}
		}
		if h.NetBIOS != "" && (len(h.NetBIOS) > 15 || strings.ToUpper(h.NetBIOS) != h.NetBIOS || strings.ContainsAny(h.NetBIOS, " \t\n\"\\/:*?<>|")) {
			bad("%s: NetBIOS name %q: want at most 15 upper-case characters", who, h.NetBIOS)
		}
		if strings.ContainsAny(h.UPnP, "\n\r<>&") {
			bad("%s: UPnP name %q: want one line without <, > or &", who, h.UPnP)
		}
		ports := map[int]bool{}
		if h.UPnP != "" {
			ports[UPnPPort] = true
		}
		for _, p := range h.TCPPorts {
			if p < 1 || p > 65535 {
				bad("%s: TCP port %d out of range 1-65535", who, p)
			}
			if ports[p] {
				bad("%s: TCP port %d given twice (8200 is minidlna's when UPnP is set)", who, p)
			}
			ports[p] = true
		}
	}
	return errors.Join(errs...)
}

func (h HostSpec) avahiHostName() string {
	if h.MDNSName != "" {
		return h.MDNSName
	}
	return h.Name
}

// defaultMAC derives a universally administered MAC from an address.
func defaultMAC(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("00:16:3e:%02x:%02x:%02x", b[1], b[2], b[3])
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n |= uint32(1)<<(32-p.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func validDNSLabel(l string) bool {
	if l == "" || len(l) > 63 {
		return false
	}
	for _, c := range l {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validDNSName(n string) bool {
	n = strings.TrimSuffix(n, ".")
	if n == "" || len(n) > 253 {
		return false
	}
	for _, l := range strings.Split(n, ".") {
		if !validDNSLabel(l) {
			return false
		}
	}
	return true
}

// DefaultSpec is the lab that lab.sh builds and that tests use when they
// want every kind of responder: 10.77.0.0/24, scanner .2, dnsmasq .3 and
//
//	printer  .10  printer.lab, mDNS printer-kitchen, _http._tcp "Kitchen Printer" :8080, TCP 80 631 8080
//	nas      .11  nas.lab, mDNS nas, _smb._tcp "Family NAS" :445, NetBIOS NAS01, TCP 22 445
//	tv       .12  UPnP "Living Room TV" (minidlna, TCP 8200)
//	quiet    .13  drops ICMP, locally administered MAC 02:42:0a:4d:00:0d, quiet.lab, TCP 22
//	laptop   .14  NetBIOS LAPTOP-LAB, laptop.lab; the host tests move (Lab.Move)
//	mystery  .15  no names at all, TCP 9100
func DefaultSpec() Spec {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	return Spec{
		Prefix:  netip.MustParsePrefix("10.77.0.0/24"),
		Scanner: a("10.77.0.2"),
		DNS:     a("10.77.0.3"),
		Hosts: []HostSpec{
			{Name: "printer", IP: a("10.77.0.10"), DNSName: "printer.lab", MDNSName: "printer-kitchen",
				DNSSD: &Service{Type: "_http._tcp", Name: "Kitchen Printer", Port: 8080}, TCPPorts: []int{80, 631, 8080}},
			{Name: "nas", IP: a("10.77.0.11"), DNSName: "nas.lab", MDNSName: "nas", NetBIOS: "NAS01",
				DNSSD: &Service{Type: "_smb._tcp", Name: "Family NAS", Port: 445}, TCPPorts: []int{22, 445}},
			{Name: "tv", IP: a("10.77.0.12"), UPnP: "Living Room TV"},
			{Name: "quiet", IP: a("10.77.0.13"), DropICMP: true, MAC: "02:42:0a:4d:00:0d", DNSName: "quiet.lab", TCPPorts: []int{22}},
			{Name: "laptop", IP: a("10.77.0.14"), NetBIOS: "LAPTOP-LAB", DNSName: "laptop.lab"},
			{Name: "mystery", IP: a("10.77.0.15"), TCPPorts: []int{9100}},
		},
	}
}
