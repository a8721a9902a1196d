package mdns

import "errors"

var (
	// ErrMalformed is wrapped by [ParseReply] for a packet that is not a
	// DNS message.
	ErrMalformed = errors.New("malformed mDNS reply")
	// ErrNoAnswer is returned (wrapped) by [Resolver.Lookup] when no
	// acceptable answer arrived in time.
	ErrNoAnswer = errors.New("no answer")
	// ErrOffLink is returned (wrapped) by [Resolver.Lookup] for a host
	// outside every local interface prefix.
	ErrOffLink = errors.New("host is not on a local link")
)
