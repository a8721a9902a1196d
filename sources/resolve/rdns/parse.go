package rdns

import (
	"sort"
	"strings"

	"github.com/miekg/dns"
)

// maxChain bounds how many CNAMEs PTRName follows.
const maxChain = 8

// PTRName returns the host name a PTR answer gives for qname (a reverse
// name such as "5.2.0.192.in-addr.arpa."), following CNAMEs in the answer
// section. The name has no trailing dot; "" means the answer holds no PTR
// for qname. With several PTR records the alphabetically first wins.
func PTRName(m *dns.Msg, qname string) string {
	if m == nil {
		return ""
	}
	owner := qname
	for range maxChain {
		var names []string
		next := ""
		for _, rr := range m.Answer {
			h := rr.Header()
			if h.Class&0x7fff != dns.ClassINET || !strings.EqualFold(h.Name, owner) {
				continue
			}
			switch v := rr.(type) {
			case *dns.PTR:
				if n := strings.TrimSuffix(v.Ptr, "."); n != "" {
					names = append(names, n)
				}
			case *dns.CNAME:
				if next == "" {
					next = v.Target
				}
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			return names[0]
		}
		if next == "" {
			return ""
		}
		owner = next
	}
	return ""
}
