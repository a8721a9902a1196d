package runner

import "errors"

var (
	// ErrAlreadyRunning is returned by Run or CatchUp on a runner that is
	// already running (Run may be called once).
	ErrAlreadyRunning = errors.New("projection runner already running")
	// ErrStopped is returned by WaitFor once Run has returned.
	ErrStopped = errors.New("projection runner stopped")
	// ErrNoSnapshot is returned when the log a projection needs was
	// compacted and no snapshot covers it.
	ErrNoSnapshot = errors.New("log compacted with no snapshot to continue from")
	// ErrCompacted is returned by Replay when the time asked for is
	// older than the oldest state the compacted log can reproduce.
	ErrCompacted = errors.New("history compacted")
	// ErrSnapshotVersion is returned when a projection must start from a
	// snapshot (the log before it was compacted) whose rows are of
	// another version than the projection's, and it cannot migrate them.
	ErrSnapshotVersion = errors.New("snapshot rows of another projection version")
	// ErrOutputExists is returned by Replay when the output file exists.
	ErrOutputExists = errors.New("output file exists")
)
