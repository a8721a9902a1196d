package dnssd

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/miekg/dns"
)

// ServicesName is the DNS-SD service type enumeration name (RFC 6763 §9).
const ServicesName = "_services._dns-sd._udp.local."

const (
	classMask = 0x7fff
	qclassQU  = dns.ClassINET | 1<<15
)

// Record is one resource record of a reply that DNS-SD cares about.
type Record struct {
	Type   uint16 // dns.TypePTR, TypeSRV, TypeA or TypeAAAA
	Name   string // owner, presentation format, lower case
	Target string // PTR or SRV target, presentation format, lower case
	Port   uint16 // SRV
	Addr   netip.Addr
	// Instance is the PTR target or SRV owner as received (case kept),
	// for instance names.
	Instance string
}

// ParseRecords returns the PTR, SRV, A and AAAA records of class IN in any
// section of a raw mDNS reply. A packet that is not a response, or carries
// an error code, yields no records and no error; bytes that are not a DNS
// message give an error wrapping ErrMalformed.
func ParseRecords(b []byte) ([]Record, error) {
	var m dns.Msg
	if err := m.Unpack(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !m.Response || m.Opcode != dns.OpcodeQuery || m.Rcode != dns.RcodeSuccess {
		return nil, nil
	}
	var out []Record
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			if h.Class&classMask != dns.ClassINET {
				continue
			}
			r := Record{Type: h.Rrtype, Name: strings.ToLower(h.Name)}
			switch v := rr.(type) {
			case *dns.PTR:
				r.Target, r.Instance = strings.ToLower(v.Ptr), v.Ptr
			case *dns.SRV:
				r.Target, r.Port, r.Instance = strings.ToLower(v.Target), v.Port, h.Name
			case *dns.A:
				a, ok := netip.AddrFromSlice(v.A)
				if !ok {
					continue
				}
				r.Addr = a.Unmap()
			case *dns.AAAA:
				a, ok := netip.AddrFromSlice(v.AAAA)
				if !ok {
					continue
				}
				r.Addr = a
			default:
				continue
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// ServiceType returns the service type of a name such as
// "_http._tcp.local." ("_http._tcp"), and false for anything that is not
// a two-label service type under local.
func ServiceType(name string) (string, bool) {
	labels := dns.SplitDomainName(name)
	if len(labels) != 3 || !strings.EqualFold(labels[2], "local") {
		return "", false
	}
	return serviceType(labels[0], labels[1])
}

func serviceType(svc, proto string) (string, bool) {
	proto = strings.ToLower(proto)
	if proto != "_tcp" && proto != "_udp" {
		return "", false
	}
	// RFC 6335 service names: 1-15 letters, digits and hyphens.
	if len(svc) < 2 || len(svc) > 16 || svc[0] != '_' {
		return "", false
	}
	for _, c := range svc[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return "", false
		}
	}
	return strings.ToLower(svc) + "." + proto, true
}

// SplitInstance splits an instance name such as
// `Living\ Room\.TV._airplay._tcp.local.` into its unescaped instance label
// ("Living Room.TV") and service type ("_airplay._tcp"). It returns false
// for names of any other shape.
func SplitInstance(name string) (instance, typ string, ok bool) {
	labels := dns.SplitDomainName(name)
	if len(labels) != 4 || !strings.EqualFold(labels[3], "local") {
		return "", "", false
	}
	typ, ok = serviceType(labels[1], labels[2])
	if !ok {
		return "", "", false
	}
	instance = Unescape(labels[0])
	if instance == "" {
		return "", "", false
	}
	return instance, typ, true
}

// Unescape turns a label in presentation format (`\.`, `\ `, `\195`) back
// into text. Invalid UTF-8 becomes U+FFFD and control characters are
// dropped, so the result is safe to show.
func Unescape(label string) string {
	b := make([]byte, 0, len(label))
	for i := 0; i < len(label); i++ {
		c := label[i]
		if c != '\\' || i+1 >= len(label) {
			b = append(b, c)
			continue
		}
		if i+3 < len(label) && isDigit(label[i+1]) && isDigit(label[i+2]) && isDigit(label[i+3]) {
			v := int(label[i+1]-'0')*100 + int(label[i+2]-'0')*10 + int(label[i+3]-'0')
			if v <= 0xff {
				b = append(b, byte(v))
				i += 3
				continue
			}
		}
		b = append(b, label[i+1])
		i++
	}
	s := strings.ToValidUTF8(string(b), string(utf8.RuneError))
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
