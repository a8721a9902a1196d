package events

import "errors"

var (
	// ErrUnknownKind is returned when an envelope's kind is not in Kinds.
	ErrUnknownKind = errors.New("unknown event kind")
	// ErrUnknownVersion is returned when a stored version is newer than this
	// build knows, or has no upcaster to the current version.
	ErrUnknownVersion = errors.New("unknown event schema version")
	// ErrBadPrevHash is returned when PrevHash is not 64 hex characters.
	ErrBadPrevHash = errors.New("previous hash is not a hex SHA-256")
)
