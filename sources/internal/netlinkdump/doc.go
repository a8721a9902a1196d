// Package netlinkdump repeats a netlink dump that a concurrent change
// interrupted, for the packages that read the kernel's links, addresses,
// routes and neighbours (arpsweep, neighbour).
//
// A dump (RTM_GETLINK, RTM_GETROUTE, ...) that the kernel sees change
// while it is being read ends with NLM_F_DUMP_INTR, which
// github.com/vishvananda/netlink reports as [netlink.ErrDumpInterrupted]
// along with the partial result. Reading it again is the fix.
package netlinkdump
