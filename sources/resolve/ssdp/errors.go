package ssdp

import "errors"

var (
	// ErrMalformed is wrapped by [ParseResponse] for a packet that is not
	// an SSDP search response.
	ErrMalformed = errors.New("malformed SSDP response")
	// ErrLocationRefused is wrapped when a reply's LOCATION is not an http
	// URL on the replying address; it is not fetched.
	ErrLocationRefused = errors.New("location refused")
	// ErrTooLarge is wrapped when a description is larger than the cap;
	// it is not read further.
	ErrTooLarge = errors.New("description too large")
	// ErrBadDescription is wrapped by [ParseDescription] for a body that
	// is not a UPnP device description.
	ErrBadDescription = errors.New("not a UPnP device description")
	// ErrNoLink is returned when no local interface holds any of the
	// sweep's hosts: SSDP needs host networking on the same link.
	ErrNoLink = errors.New("no local interface on the hosts' networks")
)
