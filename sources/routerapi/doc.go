// Package routerapi is the routerapi source kind: a MikroTik RouterOS 7
// router, switch or access point read over its REST API
// (plugins.routerapi.<instance>; facts in ../shared/reference/routerapi.md).
//
// Reader is a sources.Poller. One Poll makes GET requests only, over one
// kept-alive connection with HTTP Basic, and merges DHCP leases, ARP and
// IPv6 neighbours, bridge hosts and the registration table of whichever
// wireless package is installed into one sources.HostRead, one host per
// MAC. topology_only reads only bridge hosts and wireless clients. Values
// arrive as strings (numbers and booleans are read either way); a menu of
// a package that is not installed (400 "no such command") is skipped; any
// other failed table makes the read incomplete with its reason, and a
// refused login or an unreachable router fails the read. Replies are
// capped at MaxTable. Every read (topology_only too) also takes the
// device's outside address, sources.Peer.Outside, from the active default
// route of ip/route and the addresses of its interface in ip/address
// (outside.go); failing to read it leaves it empty and the read as
// complete as it was. routerapitest is a fake router for tests.
package routerapi
