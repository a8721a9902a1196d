// Package icmpsweep sends ICMP echo requests to every address of a set of
// prefixes through one socket and reports who answered, with round-trip
// times.
//
// # Sockets
//
// [Open] tries the unprivileged ICMP datagram socket ("ping socket",
// allowed when the process's group is in net.ipv4.ping_group_range), then
// a raw socket (needs CAP_NET_RAW), per address family. When neither
// opens it returns an error wrapping [ErrNoICMP] that names both fixes.
// In datagram mode the kernel picks the echo identifier and delivers only
// this socket's replies; in raw mode the socket sees every echo reply on
// the host (a kernel ICMP filter drops everything else) and replies are
// matched on a random identifier. In both modes each probe carries a
// random per-sweep token and its send time, so replies to someone else's
// probes are ignored and no per-address send-time table is needed.
//
// # Pacing and memory
//
// [Pinger.Sweep] walks the addresses lazily (nothing lists a /8's 16M
// addresses): per address it keeps one "answered" bit, and an RTT only
// for responders, so a /16 costs 8 KiB and allocates well under a byte
// per address. Probes leave through a golang.org/x/time/rate token bucket
// at Params.Rate per second, taken a small batch at a time (never per
// probe sleeps). Round r probes every address that has not answered yet;
// Params.Recheck lets the caller spare addresses not worth another probe.
// After the last probe the sweep waits Params.Wait, less when everything
// answered.
//
// EAGAIN and ENOBUFS are back-pressure: probes to on-link addresses wait
// in the kernel for ARP/NDP, and past net.ipv4.neigh.default.gc_thresh3
// the kernel refuses new neighbour entries. The probe is sent again after
// a pause (1ms doubling to 64ms, for up to 5s); only probes the kernel
// accepted count in Result.ProbesSent. The socket asks for 4 MiB of
// buffer (SO_SNDBUFFORCE when allowed).
//
// # Bad input
//
// Network and broadcast addresses of IPv4 prefixes shorter than /31 are
// skipped (a /31 and a /32 probe every address; IPv6 prefixes skip the
// subnet-router anycast address). Overlapping prefixes probe each address
// once, under the most specific prefix. A prefix over 2^24 addresses is
// refused before anything is sent ([ErrPrefixTooLarge]); one over 2^16
// addresses gets a warning with the time a sweep takes and is still paced.
// A network without a route ("network is unreachable") is recorded once
// in Result.Errors and, when its first 256 probes all fail, skipped. The
// sweeping host's own addresses answer like any other.
//
// The address walk, the pacing and the socket buffer sizing are shared
// with package arpsweep: sources/internal/sweeptargets,
// sources/internal/sweeprun and sources/internal/sockbuf. Besides those,
// this package imports only the standard library (they use
// golang.org/x/time and golang.org/x/sys).
package icmpsweep
