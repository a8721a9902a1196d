// Package store is jocasta's source of truth: an append-only, hash-chained
// event log in one bbolt file, with per-consumer checkpoints, snapshots of
// projection buckets, and compaction behind a snapshot.
//
// # Overview
//
// [Open] opens (or creates) the file; [Store.Append] adds events and
// returns once they are on disk; [Store.AppendFunc] decides and appends
// in one write transaction; [Store.Read], [Store.Scan] and [Store.Get]
// read them back; [Store.Verify] walks the hash chain and names the first
// bad seq (it backs `jocasta log verify`). Projections keep their own
// buckets in the same file ([Store.DB]) and record how far they have read
// with [SetCheckpoint] in the same transaction as their rows.
// [SaveSnapshotOfTx] dumps their buckets at an event,
// [Store.RestoreSnapshotBuckets] streams them back in transactions of
// bounded size ([RestoreSnapshotTx] puts a decoded one back in one), and
// [Store.Compact] removes the events a snapshot covers.
// [Store.CopyLog] copies the log, exactly, into an empty store (for
// `jocasta replay`); [Store.CopyLogFunc] also hands the copied events,
// decoded, to the caller, so a replay reads the log once.
// [Store.CloneUncompacted] copies the whole file instead, and
// [ResetToLogTx] empties such a copy down to its log, for the replay of a
// whole uncompacted log. The store knows the envelope but no business rules,
// and nothing of the bus: cmd connects [Store.OnCommit] to the doorbell.
//
// # File layout
//
// One bbolt file, mode 0600, in a directory created 0700. Buckets:
//
//	log          key: 8-byte big-endian seq (so keys sort by seq)
//	             value: json.Marshal(events.Envelope), hash included; the
//	             bytes are the envelope's canonical bytes (what the hash
//	             covers) with ,"hash":"…" spliced in before the last brace.
//	             A value of 256 KiB or more (a flow window's event) is
//	             stored out of line: here a 9-byte stub (0x00 and its
//	             length, 8 bytes big-endian), in log_parts its bytes.
//	             The bucket's sequence equals the head seq.
//	log_parts    8-byte seq and 4-byte part number, big-endian → up to
//	             5,000 bytes of an out-of-line value (logvalue.go); created
//	             with the first one.
//	meta         "schema" 8-byte version (1; 2 once the file holds an
//	             out-of-line value); "head" 8-byte seq of the
//	             last event; "head_hash" its hex hash (ZeroHash when none);
//	             "anchor" JSON {"seq","hash"} of the last event compaction
//	             removed (absent before the first compaction).
//	checkpoints  consumer name → 8-byte big-endian seq.
//	snapshots    8-byte big-endian seq → nested bucket with "info" (JSON
//	             [SnapshotInfo]) and "data" (a gzip-compressed [Snapshot], snapcodec.go),
//	             or, above 1 MiB, its pieces "data/000000", "data/000001", ...
//
// Event n's hash is SHA-256(hash of n-1 as 32 bytes || canonical bytes of
// n), where the hash before seq 1 is events.ZeroHash and the hash before
// the first event kept after compaction is the anchor's. Head and head
// hash are written in the same transaction as the events, so they can
// never disagree with the log after a crash; Open checks that they agree
// (and that the file is as long as its pages), which catches a truncated
// or tampered tail cheaply. Verify checks everything else.
//
// A typical sweep.completed with 5 hosts (MACs, names, one service, one
// UPnP description) is about 1,490 bytes of JSON. New files use 16 KiB
// pages, which hold ten such values: about 1,650 bytes of pages per event
// (4 KiB pages would hold two: 2,060). The file itself grows in steps (up
// to 16 MiB), so it can be up to one step larger; see BenchmarkLogSize.
//
// # Decoding
//
// Read, Get, Scan, [Store.ReadAppend] and CopyLog decode stored values
// with a parser of the one layout the store writes (the canonical bytes
// plus the hash: fields in a fixed order, no whitespace, strings without
// escapes), checking the payload is valid JSON as encoding/json would.
// Any other value, valid or not, goes to encoding/json, so the result
// and the error are exactly json.Unmarshal's (FuzzDecodeEnvelope). It is
// about five times faster and was a third of a replay's cost. Envelopes
// read in one call share their Source and Actor strings when equal.
// CopyLog checks each event's seq and link to the one before it and
// writes the stored bytes straight from the source's pages; it does not
// recompute hashes (Verify does).
//
// # Durability
//
// Append returns after bbolt's commit, which writes the pages, fdatasyncs,
// writes the meta page and fdatasyncs again: a crash at any moment leaves
// either the state before the transaction or the state after it, and an
// acknowledged event is on disk. Options.NoSync turns the syncs off (on
// commit and when the file grows) and exists for benchmarks and for the
// output of a replay, which is synced once complete. TestCrashKill kills a child process that
// appends from several goroutines with SIGKILL at random moments, then
// reopens, verifies, and checks that every acknowledged append is there.
// (A SIGKILL leaves the page cache intact; a power cut also needs the disk
// to honour fdatasync, which the test cannot show.)
//
// Open never writes to a file it has not checked: an existing, non-empty
// file is first opened read-only (a shared lock, no writes) and checked;
// a file that is not bbolt, is truncated, or breaks the invariants above
// gives [ErrCorrupt] naming the path, and is left byte for byte as it
// was. A file locked by another process gives [ErrLocked] after
// Options.LockTimeout (2 s) as one line: "store: open PATH: database is
// locked by another process (is jocasta serve running?)". Memory faults
// and panics inside bbolt while opening a damaged file are turned into
// ErrCorrupt (runtime/debug.SetPanicOnFault).
//
// # Concurrency
//
// All methods are safe for concurrent use. One writer goroutine owns
// appends: it takes every request queued (up to Options.MaxBatch, never
// waiting for more), runs one bbolt transaction and one commit for all of
// them, answers every caller, then runs the OnCommit hooks with the new
// head, in commit order. Under load many callers share one fsync, so
// throughput grows with the number of concurrent appenders; a lone caller
// pays one commit. Callers validate and pre-encode their envelopes on
// their own goroutines; the writer splices in seq and prev_hash, hashes
// and writes.
//
// A bad envelope fails only its own call. An AppendFunc whose decide
// fails (or panics, or returns a bad envelope) makes the writer roll the
// transaction back and retry the rest of the batch without it, so decide
// may run more than once and must have no effect outside the transaction.
// decide should only read; if it writes (a write model saved next to its
// events), those writes commit or roll back with its events. Inside decide
// read the log with [Store.ReadTx] on the given tx, never with Read, Get
// or Scan (a second transaction in the same goroutine can deadlock
// bbolt), and never call Append, AppendFunc, Compact, CopyLog or Close:
// the writer is busy running decide. The same goes for OnCommit hooks,
// which run on the writer goroutine: ring a doorbell and return.
//
// A context cancelled before the request is queued fails the call with
// ctx.Err(); once queued, the request completes, so an append is never in
// doubt. Close stops taking requests (later calls get [ErrClosed]),
// waits for the queue to drain durably, then closes the file.
//
// Reads use short read transactions and copy what they return. Compact
// works in transactions of 4,096 keys, so appends interleave with it;
// Verify and Compact exclude each other, so Verify never walks a log
// being cut.
//
// # Caveats
//
//   - Checkpoint and SetCheckpoint use the caller's transaction: keep a
//     consumer's rows and its checkpoint in the same Update.
//   - A snapshot names whole buckets. Restoring "checkpoints" restores
//     every consumer's position, reactors included.
//   - [Store.DeleteSnapshotsBefore] always keeps the newest snapshot, so
//     the compacted part of the log stays covered.
//   - CopyLog copies a prefix: it stops at the first event after until,
//     even if a later event has an earlier time, to keep one chain.
//   - bbolt never shrinks the file; compaction frees pages for reuse.
//   - Long read transactions on [Store.DB] delay the writer when the file
//     has to grow (bbolt remaps it): keep them short.
//   - The Config convention (setDefaults/Validate) is [Options]
//     with [Options.Validate]; Options is the API the other packages use.
package store
