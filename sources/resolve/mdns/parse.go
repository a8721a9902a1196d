package mdns

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/miekg/dns"
)

// classMask clears the cache-flush (answers) or QU (questions) bit.
const classMask = 0x7fff

// qclassQU is class IN with the unicast-response bit set.
const qclassQU = dns.ClassINET | 1<<15

// ReverseName returns the reverse-mapping name of ip, such as
// "5.2.0.192.in-addr.arpa.".
func ReverseName(ip netip.Addr) (string, error) {
	return dns.ReverseAddr(ip.Unmap().WithZone("").String())
}

// Query returns the packed PTR query for qname with the given id; qu sets
// the unicast-response bit. Recursion is not desired (RFC 6762 §18.6).
func Query(id uint16, qname string, qu bool) ([]byte, error) {
	m := &dns.Msg{
		MsgHdr:   dns.MsgHdr{Id: id, Opcode: dns.OpcodeQuery},
		Question: []dns.Question{{Name: qname, Qtype: dns.TypePTR, Qclass: dns.ClassINET}},
	}
	if qu {
		m.Question[0].Qclass = qclassQU
	}
	return m.Pack()
}

// ParseReply extracts the host name that a raw mDNS reply gives for qname.
// It returns "" and no error for a well-formed packet that does not answer
// qname (a query, another name, an error code), and an error wrapping
// ErrMalformed for bytes that are not a DNS message. The name has no
// trailing dot; with several PTR records the alphabetically first wins.
func ParseReply(b []byte, qname string) (string, error) {
	var m dns.Msg
	if err := m.Unpack(b); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !m.Response || m.Opcode != dns.OpcodeQuery || m.Rcode != dns.RcodeSuccess {
		return "", nil
	}
	var names []string
	for _, rr := range m.Answer {
		p, ok := rr.(*dns.PTR)
		if !ok || p.Hdr.Class&classMask != dns.ClassINET || !strings.EqualFold(p.Hdr.Name, qname) {
			continue
		}
		if n := strings.TrimSuffix(p.Ptr, "."); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	sort.Strings(names)
	return names[0], nil
}
