// Package events is the vocabulary of jocasta: the envelope every fact is
// stored in, the kinds of fact, their payloads, and the codec that decodes
// stored payloads of any past schema version into today's types.
//
// # Overview
//
// Every sweep result, plugin read, user edit, token and account change is an
// [Envelope] appended to the log (package store). Kinds are named in the past
// tense ("sweep.completed", "device.edited") and listed once, explicitly, in
// [Kinds]. A stored event is never rewritten: when a payload changes shape,
// its kind gets a new version and an upcaster that turns the old JSON into
// the new one, so the log can always be replayed with today's code.
//
// The hash chain: each envelope carries the hash of the one before it
// (PrevHash) and its own Hash = SHA-256(prev hash bytes || canonical bytes).
// [Envelope.CanonicalBytes] is the JSON encoding of every field but Hash.
//
// Decoding: [Registry.Decode] and [Registry.DecodeInto] parse the
// payloads a replay is made of (sweep.completed, clock.ticked) with
// hand-written parsers, about four times faster than encoding/json. They
// take any valid JSON of the payload's shape but hand anything unusual
// (escapes, null, unknown or repeated keys, non-integer numbers, a
// destination that is not zero) to encoding/json, so the result and the
// error are always json.Unmarshal's; FuzzFastDecode compares the two.
// They are built on [JSONScanner], which the store's decoder of stored
// envelopes shares. It lives here rather than in a package of its own
// because the import rules let events import nothing and let store
// import only events.
//
// # Caveats
//
// This package performs no I/O and imports only the standard library.
// docs/events.md documents every kind; a test keeps the two in step.
package events
