// Package scheduler runs the configured source instances: each poller on
// its interval with a jitter, never two polls of one instance at once,
// each bounded by its timeout; each listener until stopped. It hands
// every outcome to a Sink, which the service wires to events/ingest: a
// result becomes one event, a failed run one scan.failed event with its
// reason. It knows only the sources package, never the log or the
// projections.
//
// # Concurrency
//
// Run starts one goroutine per instance and returns once ctx is done and
// every run in progress has returned and been recorded (a stop lets the
// append of a cut-short run finish, within RecordBudget).
package scheduler
