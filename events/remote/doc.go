// Package remote carries the observations of remote sensors to the
// central service over NATS JetStream, through watermill's NATS
// transport (github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream).
//
// # Overview
//
// A sensor (`jocasta sensor`) runs the sources of its own configuration
// at a remote site. Its [Sensor] is the scheduler's sink: each run
// becomes the one event the local sink would append (events/ingest's
// RunEvent, written whole), which is stored in a durable [Outbox] (a
// small bbolt file of its own, 0600) before Record returns. A sender
// goroutine publishes the outbox in order, one message per event, on the
// sensor's own subject (SubjectFor: "jocasta-sensors.<name>"), and
// removes each only once JetStream acknowledged it; while the link is
// down the outbox keeps them, and they leave in order when it returns.
//
// The central ([Central], run by `serve`) consumes the stream with a
// durable consumer, checks the sensor name against the allowed list and
// against the subject the message came on, and appends each event once
// with source "sensor:<name>" (its sweeps and port scans) or
// "sensor:<name>/<kind>:<instance>" (its plugins), keeping the event's
// own ID (the observation's id) and time. Sweeps arrive whole and are
// written as the difference from the source's previous one, as the
// local sink writes them. It acks a message only after the append
// committed.
//
// [StartEmbedded] runs the NATS server in the central's process: the
// sensors' user may only publish on the sensors' subjects; the central
// connects in-process as its own user.
//
// # Exactly once in the log
//
// Delivery is at least once end to end: the sensor resends what was not
// acknowledged, and JetStream redelivers what the central did not ack.
// Two checks make the log hold each observation once. The publisher sets
// Nats-Msg-Id to the observation id, so JetStream drops a resend within
// its duplicate window (10 minutes on the stream the central creates).
// And the central keeps a bucket of the ids it appended, with their seq,
// written in the same transaction as the event (store.AppendFunc), so a
// redelivery at any later time appends nothing. The bucket is rebuilt
// from the log (the events' ids) when it is missing, as after a replay.
// Ids are forgotten after 7 days.
//
// # Silence
//
// A sensor that stops sending appends nothing, and no data is not
// offline (projections/inventory/coverage.go). So the central records
// the silence: when it has heard nothing from a sensor for 3 times the
// sensor's interval (its shortest source interval, sent with every
// message), it appends a scan.failed for each source of that sensor,
// which marks them failing: their devices become not covered, never
// offline. The next message clears it.
//
// # Why this package imports watermill
//
// events/bus is the in-process doorbell; this package is the one
// multi-machine transport, and the archtest rule names both.
//
// # Concurrency
//
// [Outbox] and [Sensor.Record] are safe for concurrent use. [Sensor.Run]
// and [Central.Run] each run once, until their context is done.
package remote
