package scheduler

import "errors"

// ErrConfig is returned for a schedule that cannot run: an interval of 0
// or less, a negative jitter or timeout, an instance with neither or both
// of Poller and Listener.
var ErrConfig = errors.New("scheduler: invalid schedule")
