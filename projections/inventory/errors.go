package inventory

import "errors"

var (
	// ErrNotLoaded is returned by queries before the runner has loaded
	// the projection.
	ErrNotLoaded = errors.New("inventory not loaded yet")
	// ErrBadFilter is returned for a sort or presence value the
	// inventory does not know; the API validates before calling.
	ErrBadFilter = errors.New("bad filter")
)
