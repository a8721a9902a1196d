// Package rpcrouter is the rpcrouter source kind: a router or access point read over its JSON-RPC bus (plugins.rpcrouter.<instance>). This build
// owns its configuration (Config); the reader itself (OpenWrt ubus, see
// ../shared/reference/rpcrouter.md) comes with its plugin issue, and until
// then `jocasta list-sources` lists the kind as not run.
package rpcrouter
