package store

import (
	"errors"

	"github.com/jocasta/jocasta/events"
)

var (
	// ErrLocked is returned by [Open] when another process holds the
	// database file's lock for longer than Options.LockTimeout.
	ErrLocked = errors.New("database is locked by another process")

	// ErrCorrupt is returned by [Open] when the file is not a bbolt
	// database, is truncated or damaged, or breaks the log's structural
	// invariants. The file is left exactly as it was.
	ErrCorrupt = errors.New("database file is damaged")

	// ErrNotFound is returned by [Store.Get] for a seq that is not in the
	// log, and by [Store.LoadSnapshot] for a seq with no snapshot.
	ErrNotFound = errors.New("not found")

	// ErrNoSnapshot is returned by [Store.Compact] when no snapshot at or
	// after the compaction point exists.
	ErrNoSnapshot = errors.New("no snapshot covers the compaction point")

	// ErrClosed is returned by every method called after [Store.Close].
	ErrClosed = errors.New("store is closed")

	// ErrUnknownKind is returned by [Store.Append] and [Store.AppendFunc]
	// for an envelope whose kind is not in the store's registry. It is
	// events.ErrUnknownKind, so either sentinel matches.
	ErrUnknownKind = events.ErrUnknownKind

	// ErrSchemaVersion is returned by [Open] when the file was written by
	// a newer build whose store schema this build does not know.
	ErrSchemaVersion = errors.New("store schema version is newer than this build")

	// ErrOutcomeUnknown is returned by [Store.Append] and
	// [Store.AppendFunc] to every caller of a batch whose commit failed
	// (a failed write or fsync, a full disk): the events may or may not
	// be on disk, and the next start decides. The store is failed from
	// then on (see [Store.Failed]).
	ErrOutcomeUnknown = errors.New("the outcome of the write is unknown: the database failed to commit it")

	// ErrFailed is returned by every append after a commit failed: the
	// store writes nothing more until the process restarts and opens the
	// file afresh.
	ErrFailed = errors.New("the database failed after a write error and accepts no more writes until restarted")

	// ErrNoDatabase is returned by [Open] with Options.MustExist or
	// ReadOnly when the file does not exist.
	ErrNoDatabase = errors.New("no database file there")

	// ErrReadOnly is returned by every append to a store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("the database is open read-only")

	// ErrBadEnvelope is returned by [Store.Append] and [Store.AppendFunc]
	// for an envelope that cannot be stored: a version outside 1..current,
	// a payload that is not JSON, or a time JSON cannot encode.
	ErrBadEnvelope = errors.New("envelope cannot be stored")
)
