// Package rpcrouter is the rpcrouter source kind: an OpenWrt router or
// access point read over ubus JSON-RPC served by uhttpd at /ubus
// (plugins.rpcrouter.<instance>; facts in ../shared/reference/rpcrouter.md).
//
// Reader is a sources.Poller. It keeps its rpcd session across reads and
// logs in again once when a call is refused as the session expired (-32002
// answers both an expired session and an ACL denial). One Poll calls
// system board, network.interface dump, network.device status, luci-rpc
// getDHCPLeases and getHostHints, file read of /proc/net/arp and the
// iwinfo association lists, read calls only, one at a time, and merges
// them into one sources.HostRead. topology_only reads only the wireless
// clients (and, like every read, network.interface dump). The interface
// dump gives the device's outside address, sources.Peer.Outside
// (outside.go); failing to read it leaves it empty and the read as
// complete as it was. The rpcd ACL file in docs/routers.md grants
// exactly these calls. rpcroutertest is a fake device for tests.
package rpcrouter
