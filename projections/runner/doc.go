// Package runner feeds the event log to the projections (the read
// models), exactly once each, and rebuilds them: at start when their
// version changes, and into a fresh file for `jocasta replay`.
//
// # Overview
//
// A [Projection] has a stable name (its checkpoint key in the store), a
// version, the bbolt buckets it owns, Apply (fold one event into its rows)
// and Load (rebuild its in-memory indexes from its rows). [New] takes the
// store and the projections; [Runner.Run] then:
//
//  1. prepares every projection: a projection whose stored version (bucket
//     [BucketVersions]) differs from Version() has its buckets dropped and
//     its checkpoint set to 0, so it is rebuilt from the log; buckets are
//     created; every projection loads its memory;
//  2. catches up: events after the lowest checkpoint are read in batches
//     (Options.BatchSize, default 10,000) and applied in ONE bbolt write
//     transaction per batch, to every projection at or behind them, with
//     each projection's checkpoint set in that same transaction. Rows and
//     checkpoint commit together or not at all, so after a crash nothing
//     is applied twice and nothing is lost;
//  3. waits for the doorbell ([Runner.Notify], wired to store.OnCommit) or
//     a safety poll (Options.PollInterval, default 5s), and catches up
//     again, until its context ends.
//
// If a batch fails (a projection's Apply or Flush error, or the commit),
// the transaction rolls back, every projection reloads its memory from
// what is committed, and Run returns the error.
//
// [Runner.Ready] is true once every projection has applied the head the
// log had when Run started (GET /api/readyz). [Runner.WaitFor] returns
// once every projection has applied a given seq: a command appends its
// event, waits for it, then reads its own write.
//
// # Throughput
//
// Catching up overlaps reading and applying: while the calling goroutine
// applies a batch, the next one is read and prepared on up to GOMAXPROCS
// goroutines, each reading its part of the batch in its own read
// transaction (store.ReadAppend, straight into its place in the batch)
// and running every [Preparer]'s Prepare over it (payload decoding,
// pure). Projections that read the same kind can share its decoding: a
// [SharedPreparer] names the kinds it prepares from a payload the runner
// decodes once for all of them (the inventory and the scan log share
// every sweep). A projection that buffers row writes implements [Flusher];
// Flush runs once per batch, before the checkpoints move.
//
// One transaction per batch holds every page it touches until it
// commits. An event too large for that (a flow window of 100,000s of
// rows) is a [Chunker]'s: the runner commits the batch before it, lets
// the projection write the event's rows in transactions of its own
// (each recording how far it got, so that a crash resumes there), then
// applies the event with what follows, the checkpoints moving past it as
// for any other.
//
// BenchmarkRebuild1M (1,000,000 events, the inventory) applies about
// 240,000 events/s on two cores, BenchmarkReplay1M about 190,000 with
// GOGC=400 as an offline replay runs (see docs/performance.md). Roughly a third of the CPU is reading and
// decoding, a third applying (with bbolt's writes), and a fifth the
// garbage collector.
//
// # Snapshots, compaction and replay
//
// After a retention.purged event at which the newest snapshot is older
// than Options.SnapshotEvery (event time; default 7 days), or there is
// none, the batch ends and the runner saves, in that batch's
// transaction, a snapshot of every projection's buckets and
// [BucketVersions] at that seq. (Other purges do not end a batch: an
// hourly purge would otherwise cost a commit and a flush per hour of
// log; what follows the cut was read and prepared already and goes on
// to the next batch.) Snapshots are stored gzip-compressed in a binary
// layout (store/snapcodec.go). [Runner.Compact] (called by the retention job after each purge)
// removes the log behind the newest snapshot taken before the history
// cutoff that every projection has passed, then deletes older snapshots.
//
// [Replay] rebuilds every projection into a fresh file. The whole of an
// uncompacted log is replayed from a copy of the database file
// (store.CloneUncompacted, a kernel file copy) reset to its log
// (store.ResetToLogTx) and rebuilt from the first event. Otherwise it
// copies the log into a fresh file (up to a time). A compacted log is continued from the newest
// snapshot at or before that time; a time inside the compacted history is
// an error wrapping [ErrCompacted] that names the earliest replayable
// time. An uncompacted log up to a time is applied while it is being
// copied: the copy
// (store.CopyLogFunc) hands over the events it decoded, so the log is
// read once, and the batches are prepared while the one before is
// applied. The output is a complete database that `jocasta serve` opens
// as is.
//
// # Caveats
//
//   - Projections must be deterministic: Apply reads the event and the
//     projection's own state, never the clock or anything outside.
//   - A projection's in-memory state is updated by Apply before the batch
//     commits, so a query may briefly see a batch that then fails; the
//     reload after the failure puts memory back to what is committed.
//   - Run may be called once per Runner; restart with a new Runner.
//   - Compaction only considers the projections' checkpoints. A reactor
//     (notifications) follows the head; one more than a history window
//     behind would miss compacted events.
//   - After compaction, a projection whose version changed, or a new one,
//     cannot see the compacted events: it starts from its rows in the
//     newest snapshot (empty for a new projection) and applies the rest,
//     so its Load must read the rows of its previous version.
package runner
