// Package bus is the doorbell between the log and its consumers, and the
// only package of jocasta that imports watermill.
//
// # Overview
//
// After every durable commit the store calls [Bus.Ring] with the new head
// seq; the bus publishes it on an in-process watermill gochannel topic.
// Consumers (the projection runner, the presence clock, later the notifier)
// [Bus.Subscribe] and, on each ring, catch up from the log at their own
// checkpoint. The message carries no data a consumer depends on: a lost,
// late or repeated ring does no harm, because the log is the truth and
// every consumer also polls on a slow timer.
//
// # Concurrency
//
// Ring never blocks the committer: it publishes from the caller's goroutine
// into watermill's buffered subscriber channels and drops the ring for a
// subscriber whose buffer is full (it already has a ring pending).
package bus
