package events

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// ZeroHash is the PrevHash of the first event of a log.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Envelope is one stored fact. Seq, PrevHash and Hash are assigned by the
// log when the event is appended; the rest is set by whoever records it.
type Envelope struct {
	// Seq is the position in the log: gapless, starting at 1.
	Seq uint64 `json:"seq"`
	// ID is a random identifier, unique across logs (32 hex characters).
	ID string `json:"id"`
	// Time is when the fact happened, always UTC.
	Time time.Time `json:"time"`
	// Kind names the fact, such as "sweep.completed".
	Kind string `json:"kind"`
	// V is the schema version of Payload.
	V int `json:"v"`
	// Source is what observed the fact: "sweep:host1", "api", "cli", "clock".
	Source string `json:"source,omitempty"`
	// Actor is who caused it: a user, a token name, or the source.
	Actor string `json:"actor,omitempty"`
	// Device is the device the fact concerns, if exactly one.
	Device string `json:"device,omitempty"`
	// Stream groups related facts ("scan/<id>", "token/<id>").
	Stream string `json:"stream,omitempty"`
	// Payload is the kind's JSON payload at schema version V.
	Payload json.RawMessage `json:"payload"`
	// PrevHash is the Hash of the event at Seq-1 (ZeroHash for Seq 1 or
	// the hash anchored by compaction).
	PrevHash string `json:"prev_hash"`
	// Hash is hex SHA-256 over PrevHash's bytes and CanonicalBytes.
	Hash string `json:"hash"`
}

// canonical is Envelope without Hash, in a fixed field order.
type canonical struct {
	Seq      uint64          `json:"seq"`
	ID       string          `json:"id"`
	Time     string          `json:"time"`
	Kind     string          `json:"kind"`
	V        int             `json:"v"`
	Source   string          `json:"source,omitempty"`
	Actor    string          `json:"actor,omitempty"`
	Device   string          `json:"device,omitempty"`
	Stream   string          `json:"stream,omitempty"`
	Payload  json.RawMessage `json:"payload"`
	PrevHash string          `json:"prev_hash"`
}

// CanonicalBytes is the byte string the hash covers: the envelope without
// Hash, times in RFC 3339 with nanoseconds in UTC, payload compacted.
func (e *Envelope) CanonicalBytes() ([]byte, error) {
	p := e.Payload
	if len(p) == 0 {
		p = json.RawMessage("null")
	}
	c := e.canonical(p)
	if len(p) >= spliceMin && compactSafe(p) && json.Valid(p) {
		if pre, post, ok := splitCanonical(c); ok {
			b := make([]byte, 0, len(pre)+len(p)+len(post))
			b = append(b, pre...)
			b = append(b, p...)
			return append(b, post...), nil
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("events: canonical bytes of seq %d: %w", e.Seq, err)
	}
	return b, nil
}

// canonical is e as CanonicalBytes encodes it, with payload p.
func (e *Envelope) canonical(p json.RawMessage) canonical {
	return canonical{
		Seq: e.Seq, ID: e.ID, Time: e.Time.UTC().Format(time.RFC3339Nano), Kind: e.Kind, V: e.V,
		Source: e.Source, Actor: e.Actor, Device: e.Device, Stream: e.Stream,
		Payload: p, PrevHash: e.PrevHash,
	}
}

// spliceMin is the payload size from which CanonicalBytes splices the
// payload in rather than have encoding/json copy it. For a payload of
// megabytes (a flow window's traffic.recorded), encoding/json grows its
// buffer by doubling, copies the result out, and keeps the doubled
// buffer in its pool until the next collections: twice the payload's
// size and more, live while the event is appended.
const spliceMin = 64 << 10

// CanonicalSplit returns e's canonical bytes as the bytes before its
// payload and the bytes after it, for a payload large enough to splice
// ([CanonicalBytes] is pre, e.Payload and post): a writer that needs them
// in one piece copies the payload once, one that does not (the store,
// which keeps a large value in parts) never. ok is false for a payload
// under spliceMin, one that is not JSON, or one encoding/json would
// change (then use CanonicalBytes).
func (e *Envelope) CanonicalSplit() (pre, post []byte, ok bool) {
	p := e.Payload
	if len(p) < spliceMin || !compactSafe(p) || !json.Valid(p) {
		return nil, nil, false
	}
	return splitCanonical(e.canonical(p))
}

// splitCanonical encodes c with encoding/json but for its payload: the
// bytes before it and after it, which with the payload as it is are the
// same bytes as json.Marshal(c) when the payload is valid and
// compactSafe. ok is false when the encoding does not end as expected
// (the caller then uses json.Marshal).
func splitCanonical(c canonical) (pre, post []byte, ok bool) {
	c.Payload = json.RawMessage("null")
	head, err := json.Marshal(c)
	if err != nil {
		return nil, nil, false
	}
	ph, err := json.Marshal(c.PrevHash)
	if err != nil {
		return nil, nil, false
	}
	// Payload and PrevHash are canonical's last fields.
	const mid = `"payload":null,"prev_hash":`
	tail := len(mid) + len(ph) + 1
	if len(head) < tail || string(head[len(head)-tail:]) != mid+string(ph)+"}" {
		return nil, nil, false
	}
	pre = append(head[:len(head)-tail:len(head)-tail], `"payload":`...)
	post = make([]byte, 0, len(`,"prev_hash":`)+len(ph)+1)
	post = append(post, `,"prev_hash":`...)
	post = append(post, ph...)
	return pre, append(post, '}'), true
}

// compactSafe reports whether encoding/json, escaping HTML as Marshal
// does, copies the JSON text p unchanged: it compacts (drops whitespace
// outside strings) and escapes <, >, & and U+2028, U+2029. It does not
// check that p is valid JSON.
func compactSafe(p []byte) bool {
	in := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(p) && p[i+1] == 0x80 && p[i+2]&^1 == 0xA8:
			return false
		case in:
			if c == '\\' {
				i++ // the escaped byte (never one of the above in valid JSON)
			} else if c == '"' {
				in = false
			}
		case c == '"':
			in = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// ComputeHash returns the hash this envelope must carry given its PrevHash.
func (e *Envelope) ComputeHash() (string, error) {
	prev, err := hex.DecodeString(e.PrevHash)
	if err != nil || len(prev) != sha256.Size {
		return "", fmt.Errorf("events: seq %d: %w", e.Seq, ErrBadPrevHash)
	}
	c, err := e.CanonicalBytes()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(c)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Seal sets PrevHash and Hash; the log calls it once Seq is known.
func (e *Envelope) Seal(prevHash string) error {
	e.PrevHash = prevHash
	h, err := e.ComputeHash()
	if err != nil {
		return err
	}
	e.Hash = h
	return nil
}

// NewID returns a random 128-bit identifier as 32 hex characters.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on Linux ≥ 3.17; a failure here means
		// the system has no entropy source at all.
		panic("events: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// New builds an envelope of a registered kind at its current version with
// the payload encoded. Time defaults to now (UTC); ID is set.
func New(kind string, payload any, t time.Time) (Envelope, error) {
	spec, ok := Lookup(kind)
	if !ok {
		return Envelope{}, fmt.Errorf("events: new %q: %w", kind, ErrUnknownKind)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: encode %s payload: %w", kind, err)
	}
	if t.IsZero() {
		t = time.Now()
	}
	return Envelope{ID: NewID(), Time: t.UTC(), Kind: kind, V: spec.Version, Payload: b}, nil
}

// MustNew is New for kinds and payloads known to be valid at compile time
// (tests and fixed internal events). It panics on a programming error.
func MustNew(kind string, payload any, t time.Time) Envelope {
	e, err := New(kind, payload, t)
	if err != nil {
		panic(err)
	}
	return e
}
