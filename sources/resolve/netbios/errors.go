package netbios

import "errors"

var (
	// ErrMalformed is wrapped by [ParseNodeStatus] for a reply that is not
	// a well-formed node status response (too short, a length pointing past
	// the end, wrong record type).
	ErrMalformed = errors.New("malformed node status response")
	// ErrNoName is returned by [Resolver.Lookup] when the host did not
	// answer before the timeout.
	ErrNoName = errors.New("no answer")
)
