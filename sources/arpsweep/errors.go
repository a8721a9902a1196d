package arpsweep

import "errors"

// ErrNotPermitted is returned by [Open] when the process may not open a
// packet socket: it needs CAP_NET_RAW (root, or setcap cap_net_raw+ep).
// Callers fall back to an ICMP sweep.
var ErrNotPermitted = errors.New("arpsweep: sending ARP needs CAP_NET_RAW (root, or setcap cap_net_raw+ep)")

// ErrBadFrame wraps every reason a received frame is not an ARP packet
// for IPv4 over Ethernet.
var ErrBadFrame = errors.New("arpsweep: not an IPv4-over-Ethernet ARP frame")

// ErrBadParams is returned by [Sweeper.Sweep] for a rate or rounds below
// 1 or a negative wait.
var ErrBadParams = errors.New("arpsweep: bad sweep parameters")

// ErrBadTarget is returned by [Sweeper.Sweep] (before anything is sent)
// for a target that is not an IPv4 prefix inside its source's subnet, or
// whose link was not opened.
var ErrBadTarget = errors.New("arpsweep: bad target")

// ErrPrefixTooLarge is returned by [Sweeper.Sweep] for a prefix with more
// than 2^24 addresses (shorter than /8).
var ErrPrefixTooLarge = errors.New("arpsweep: network too large to sweep")

// ErrClosed is returned by [Sweeper.Sweep] after [Sweeper.Close].
var ErrClosed = errors.New("arpsweep: sweeper closed")
