package sweeprun

import (
	"fmt"
	"net/netip"
)

// Sends is what became of the sends to one network of a sweep. Only the
// sender goroutine uses it.
type Sends struct {
	// Sent counts the sends the kernel accepted; Failed those it refused
	// for good (no route, link down), FirstErr the first such error.
	Sent, Failed int
	FirstErr     error
	// Abandoned is set when the rest of the network is skipped.
	Abandoned bool
}

// Problem describes the failed sends for a result's errors, or returns
// "" when there were none: "network 192.0.2.0/24: 3 probes not sent:
// <FirstErr>", with " (rest of the network skipped)" when abandoned.
// notSent says what was not sent, and where if it matters ("probes not
// sent", "ARP requests not sent on eth0").
func (n *Sends) Problem(network netip.Prefix, notSent string) string {
	if n.Failed == 0 {
		return ""
	}
	msg := fmt.Sprintf("network %v: %d %s: %v", network, n.Failed, notSent, n.FirstErr)
	if n.Abandoned {
		msg += " (rest of the network skipped)"
	}
	return msg
}
