package icmpsweep

import "errors"

// ErrNoICMP is returned by [Open] when neither an unprivileged ICMP
// datagram socket nor a raw socket can be opened.
var ErrNoICMP = errors.New("icmp: cannot open an ICMP socket: allow unprivileged ping with " +
	"`sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"` or give the binary CAP_NET_RAW " +
	"(setcap cap_net_raw+ep)")

// ErrPrefixTooLarge is returned by [Pinger.Sweep] (before anything is
// sent) for a network with more than 2^24 addresses: shorter than /8 for
// IPv4 or /104 for IPv6.
var ErrPrefixTooLarge = errors.New("icmpsweep: network too large to sweep")

// ErrBadParams is returned by [Pinger.Sweep] for a rate or rounds below 1
// or a negative wait.
var ErrBadParams = errors.New("icmpsweep: bad sweep parameters")

// ErrNoSocket is returned by [Pinger.Sweep] when a prefix needs an address
// family the Pinger was not opened for.
var ErrNoSocket = errors.New("icmpsweep: no socket for this address family")

// ErrClosed is returned by [Pinger.Sweep] after [Pinger.Close].
var ErrClosed = errors.New("icmpsweep: pinger closed")
