// Package dnsnode is the dnsnode source kind: a DNS server node whose query log is read (plugins.dnsnode.<instance>). This build
// owns its configuration (Config); the reader itself (Technitium, see
// ../shared/reference/dnsnode.md) comes with its plugin issue, and until
// then `jocasta list-sources` lists the kind as not run.
package dnsnode
