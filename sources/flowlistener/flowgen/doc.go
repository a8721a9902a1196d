// Package flowgen builds NetFlow v5, v9 and IPFIX datagrams for tests
// and benchmarks: ordinary exports, and the edge cases a collector must
// survive (data before its template, template withdrawal, sampling
// options, IPv6, set padding, enterprise and variable-length fields,
// reduced-size counters, hostile lengths). It writes what RFC 3954 and
// RFC 7011 describe, independently of the decoder it tests.
//
// [WritePcap] writes packet captures (gopacket's pcapgo) of
// conversations whose bytes and packets per direction are known
// ([Conv]), for real exporters to turn into flows: softflowd and
// nfdump's nfpcapd read them (sources/flowlistener/flowtest).
package flowgen
