package dnssd

import "errors"

var (
	// ErrMalformed is wrapped by [ParseRecords] for a packet that is not a
	// DNS message.
	ErrMalformed = errors.New("malformed mDNS reply")
	// ErrNoLink is returned when no local interface holds any of the
	// sweep's hosts: DNS-SD needs host networking on the same link.
	ErrNoLink = errors.New("no local interface on the hosts' networks")
)
