// Package dnsfilter1 is the dnsfilter1 source kind: a DNS filtering server, version 6 of its product line, whose query log is read (plugins.dnsfilter1.<instance>). This build
// owns its configuration (Config); the reader itself (Pi-hole v6, see
// ../shared/reference/dnsfilter1.md) comes with its plugin issue, and until
// then `jocasta list-sources` lists the kind as not run.
package dnsfilter1
