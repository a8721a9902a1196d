package store

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
)

// Stored values are decoded by a hand-written parser of the one layout
// the store writes (the canonical encoding with the hash appended: no
// whitespace, fields in a fixed order, strings without escapes), built
// on events.JSONScanner, which is about five times faster than
// encoding/json (decoding envelopes was a third of a replay's cost).
// Anything else, valid or not, goes to encoding/json, so the result (and
// the error) is always exactly json.Unmarshal's: FuzzDecodeEnvelope
// compares the two.

// decodeEnvelope parses a stored value. The result copies every byte it
// keeps, so it outlives the transaction.
func decodeEnvelope(v []byte) (events.Envelope, error) {
	return decodeEnvelopeReuse(v, nil)
}

// decodeEnvelopeReuse is decodeEnvelope that takes Source and Actor from
// prev when they are the same, so reading a run of events from one
// source allocates them once.
func decodeEnvelopeReuse(v []byte, prev *events.Envelope) (events.Envelope, error) {
	return decodeEnvelopeOwned(v, prev, false)
}

// decodeEnvelopeOwned is decodeEnvelopeReuse for a value the caller owns
// (an out-of-line value put back together on the heap) when owned: the
// payload then points into v instead of being copied (a window's event
// would otherwise be held twice while it is read).
func decodeEnvelopeOwned(v []byte, prev *events.Envelope, owned bool) (events.Envelope, error) {
	if r, ok := splitEnvelope(v); ok {
		return r.envelope(prev, owned), nil
	}
	var e events.Envelope
	if err := json.Unmarshal(v, &e); err != nil {
		return events.Envelope{}, err
	}
	return e, nil
}

// rawEnvelope is a stored value split into its fields, without copying:
// the slices point into the value. Strings are their contents (no
// quotes, no escapes); payload is the raw value.
type rawEnvelope struct {
	seq     uint64
	v       int64
	time    time.Time
	id      []byte
	kind    []byte
	source  []byte
	actor   []byte
	device  []byte
	stream  []byte
	payload []byte
	prev    []byte
	hash    []byte
}

// splitEnvelope splits a value in the canonical stored layout. ok is
// false for anything else (other layouts, escapes, a time that does not
// parse, invalid JSON), which the caller hands to encoding/json.
func splitEnvelope(v []byte) (r rawEnvelope, ok bool) {
	p := events.NewJSONScanner(v)
	// An optional field is (!p.Lit(key) || read): absent, or read.
	ok = r.splitHead(&p) &&
		p.Lit(`,"v":`) && p.Int(&r.v) && r.v == int64(int(r.v)) &&
		(!p.Lit(`,"source":`) || p.PlainString(&r.source)) &&
		(!p.Lit(`,"actor":`) || p.PlainString(&r.actor)) &&
		(!p.Lit(`,"device":`) || p.PlainString(&r.device)) &&
		(!p.Lit(`,"stream":`) || p.PlainString(&r.stream)) &&
		p.Lit(`,"payload":`) && p.RawValue(&r.payload) &&
		p.Lit(`,"prev_hash":`) && p.PlainString(&r.prev) &&
		p.Lit(`,"hash":`) && p.PlainString(&r.hash) &&
		p.Lit(`}`) && p.End()
	return r, ok
}

// splitHead reads the fields a stored value begins with (seq, id, time,
// kind) from p into r: all of a value that log stats needs, which for a
// value stored out of line lies in its first part.
func (r *rawEnvelope) splitHead(p *events.JSONScanner) bool {
	return p.Lit(`{"seq":`) && p.Uint(&r.seq) &&
		p.Lit(`,"id":`) && p.PlainString(&r.id) &&
		p.Lit(`,"time":`) && p.Time(&r.time) &&
		p.Lit(`,"kind":`) && p.PlainString(&r.kind)
}

// envelope builds the Envelope json.Unmarshal would. Source and Actor
// equal to prev's are shared with it. ID, PrevHash, Hash, Device and
// Stream are cut from one allocation (none of them is worth keeping
// alone; Source and Actor, which projections keep as evidence, are
// allocated on their own).
func (r *rawEnvelope) envelope(prev *events.Envelope, owned bool) events.Envelope {
	e := events.Envelope{
		Seq:     r.seq,
		Kind:    internKind(r.kind),
		V:       int(r.v),
		Time:    r.time,
		Payload: json.RawMessage(r.payload[:len(r.payload):len(r.payload)]),
	}
	if !owned {
		e.Payload = append(json.RawMessage(nil), r.payload...)
	}
	var sb strings.Builder
	sb.Grow(len(r.id) + len(r.prev) + len(r.hash) + len(r.device) + len(r.stream))
	sb.Write(r.id)
	sb.Write(r.prev)
	sb.Write(r.hash)
	sb.Write(r.device)
	sb.Write(r.stream)
	all := sb.String()
	cut := func(n int) string {
		s := all[:n]
		all = all[n:]
		return s
	}
	e.ID, e.PrevHash, e.Hash = cut(len(r.id)), cut(len(r.prev)), cut(len(r.hash))
	e.Device, e.Stream = cut(len(r.device)), cut(len(r.stream))
	e.Source, e.Actor = reuse(r.source, prev, func(p *events.Envelope) string { return p.Source }), reuse(r.actor, prev, func(p *events.Envelope) string { return p.Actor })
	return e
}

// reuse returns get(prev) when it equals b, else b as a new string.
func reuse(b []byte, prev *events.Envelope, get func(*events.Envelope) string) string {
	if len(b) == 0 {
		return ""
	}
	if prev != nil {
		if s := get(prev); s == string(b) {
			return s
		}
	}
	return string(b)
}

// link is what CopyLog needs of a stored value to follow the chain.
// prev and hash may point into the value.
type link struct {
	seq        uint64
	time       time.Time
	prev, hash []byte
}

// decodeLink decodes the chain fields of a stored value, as
// decodeEnvelope would but without copying anything.
func decodeLink(v []byte) (link, error) {
	if r, ok := splitEnvelope(v); ok {
		return link{seq: r.seq, time: r.time, prev: r.prev, hash: r.hash}, nil
	}
	e, err := decodeEnvelope(v)
	if err != nil {
		return link{}, err
	}
	return link{seq: e.Seq, time: e.Time, prev: []byte(e.PrevHash), hash: []byte(e.Hash)}, nil
}

// internKind returns the constant for a kind replays are made of, so
// decoding one does not allocate.
func internKind(b []byte) string {
	for _, k := range [...]string{
		events.KindSweepCompleted, events.KindClockTicked, events.KindPortScanCompleted,
		events.KindDeviceEdited, events.KindDeviceWatchSet, events.KindRetentionPurged,
	} {
		if string(b) == k { // no allocation: the compiler compares in place
			return k
		}
	}
	return string(b)
}
