package rdns

import "errors"

var (
	// ErrNoServers is returned when no resolver is configured and none
	// could be read from resolv.conf.
	ErrNoServers = errors.New("no resolvers configured")
	// ErrLookupsFailed is wrapped by the error Enrich returns when at
	// least one lookup failed on every server (timeouts, SERVFAIL...).
	ErrLookupsFailed = errors.New("reverse lookups failed")
)
