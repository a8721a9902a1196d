package rpcrouter

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/jocasta/jocasta/sources"
)

// FuzzReplies feeds hostile replies to the reply decoder and every
// table's parser: no panic, every host well-formed, the outside address
// empty or a canonical IPv4 address.
func FuzzReplies(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":[0,{"dhcp_leases":[{"expires":false,"macaddr":"00:00:5E:00:53:22","ipaddr":"192.0.2.20"}]}]}`,
		`{"jsonrpc":"2.0","id":1,"result":[0,{"00:00:5E:00:53:11":{"ipaddrs":["192.0.2.50"],"name":"printer"}}]}`,
		`{"jsonrpc":"2.0","id":1,"result":[0,{"data":"IP address HW type Flags HW address Mask Device\n192.0.2.50 0x1 0x2 00:00:5e:00:53:11 * br-lan\n"}]}`,
		`{"jsonrpc":"2.0","id":1,"result":[0,{"results":[{"mac":"00:00:5E:00:53:33","signal":-61}]}]}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Access denied"}}`,
		`{"jsonrpc":"2.0","id":1,"result":[0,{"interface":[{"interface":"wan","up":true,"metric":0,"ipv4-address":[{"address":"203.0.113.7","mask":24}],"route":[{"target":"0.0.0.0","mask":0,"nexthop":"203.0.113.1"}]}]}]}`,
		`{"result":[6]}`, `{"result":[]}`, `{"result":["x"]}`, `{"result":[0]}`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var read sources.HostRead
		var set sources.HostSet
		var l leases
		if decodeReply("t", data, &l) == nil {
			applyLeases(l, &read, &set)
		}
		var h map[string]hint
		if decodeReply("t", data, &h) == nil {
			applyHints(h, &read, &set)
		}
		var fd fileData
		if decodeReply("t", data, &fd) == nil {
			applyARP(fd.Data, &read, &set)
		}
		applyARP(string(data), &read, &set)
		var al assocList
		_ = decodeReply("t", data, &al)
		var d interfaceDump
		if decodeReply("t", data, &d) == nil {
			if o := outsideAddress(d); o != "" {
				if ip, err := netip.ParseAddr(o); err != nil || !ip.Is4() || ip.String() != o {
					t.Fatalf("outside %q is not a canonical IPv4 address", o)
				}
			}
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(data, &raw)
		for _, host := range set.Hosts() {
			if sources.NormalizeMAC(host.MAC) != host.MAC {
				t.Fatalf("MAC %q", host.MAC)
			}
			for _, ip := range host.IPs {
				if !ip.IsValid() || ip.IsLinkLocalUnicast() {
					t.Fatalf("address %v", ip)
				}
			}
		}
	})
}
