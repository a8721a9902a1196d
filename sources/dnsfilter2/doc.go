// Package dnsfilter2 is the dnsfilter2 source kind: a second DNS filtering server whose query log is read (plugins.dnsfilter2.<instance>). This build
// owns its configuration (Config); the reader itself (AdGuard Home, see
// ../shared/reference/dnsfilter2.md) comes with its plugin issue, and until
// then `jocasta list-sources` lists the kind as not run.
package dnsfilter2
