package store

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events"
)

// Stored values are decoded by a hand-written parser of the one layout
// the store writes (the canonical encoding with the hash appended: no
// whitespace, fields in a fixed order, strings without escapes), which
// is about five times faster than encoding/json (decoding envelopes was
// a third of a replay's cost). Anything else, valid or not, goes to encoding/json, so
// the result (and the error) is always exactly json.Unmarshal's:
// FuzzDecodeEnvelope compares the two.

// decodeEnvelope parses a stored value. The result copies every byte it
// keeps, so it outlives the transaction.
func decodeEnvelope(v []byte) (events.Envelope, error) {
	return decodeEnvelopeReuse(v, nil)
}

// decodeEnvelopeReuse is decodeEnvelope that takes Source and Actor from
// prev when they are the same, so reading a run of events from one
// source allocates them once.
func decodeEnvelopeReuse(v []byte, prev *events.Envelope) (events.Envelope, error) {
	if r, ok := splitEnvelope(v); ok {
		if e, ok := r.envelope(prev); ok {
			return e, nil
		}
	}
	var e events.Envelope
	if err := json.Unmarshal(v, &e); err != nil {
		return events.Envelope{}, err
	}
	return e, nil
}

// rawEnvelope is a stored value split into its fields, without copying:
// the slices point into the value. Strings are their contents (no
// quotes, no escapes); time keeps its quotes; payload is the raw value.
type rawEnvelope struct {
	seq     uint64
	v       int64
	id      []byte
	time    []byte
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
// false for anything else (other layouts, escapes, invalid JSON), which
// the caller hands to encoding/json.
func splitEnvelope(v []byte) (r rawEnvelope, ok bool) {
	p := envParser{b: v}
	if !p.lit(`{"seq":`) {
		return r, false
	}
	if r.seq, ok = p.uint(); !ok {
		return r, false
	}
	if !p.lit(`,"id":`) {
		return r, false
	}
	if r.id, ok = p.str(); !ok {
		return r, false
	}
	if !p.lit(`,"time":`) {
		return r, false
	}
	start := p.i
	if _, ok = p.str(); !ok {
		return r, false
	}
	r.time = v[start:p.i]
	if !p.lit(`,"kind":`) {
		return r, false
	}
	if r.kind, ok = p.str(); !ok {
		return r, false
	}
	if !p.lit(`,"v":`) {
		return r, false
	}
	if r.v, ok = p.int(); !ok {
		return r, false
	}
	// The optional fields, in canonical order.
	for _, f := range [...]struct {
		name string
		dst  *[]byte
	}{{`,"source":`, &r.source}, {`,"actor":`, &r.actor}, {`,"device":`, &r.device}, {`,"stream":`, &r.stream}} {
		if p.lit(f.name) {
			if *f.dst, ok = p.str(); !ok {
				return r, false
			}
		}
	}
	if !p.lit(`,"payload":`) {
		return r, false
	}
	start = p.i
	if !p.value(0) {
		return r, false
	}
	r.payload = v[start:p.i]
	if !p.lit(`,"prev_hash":`) {
		return r, false
	}
	if r.prev, ok = p.str(); !ok {
		return r, false
	}
	if !p.lit(`,"hash":`) {
		return r, false
	}
	if r.hash, ok = p.str(); !ok {
		return r, false
	}
	if !p.lit(`}`) || p.i != len(v) {
		return r, false
	}
	return r, true
}

// envelope builds the Envelope json.Unmarshal would. ok is false when
// the time does not parse (the caller then lets encoding/json report it).
// Source and Actor equal to prev's are shared with it. ID, PrevHash,
// Hash, Device and Stream are cut from one allocation (none of them is
// worth keeping alone; Source and Actor, which projections keep as
// evidence, are allocated on their own).
func (r *rawEnvelope) envelope(prev *events.Envelope) (events.Envelope, bool) {
	e := events.Envelope{
		Seq:     r.seq,
		Kind:    internKind(r.kind),
		V:       int(r.v),
		Payload: append(json.RawMessage(nil), r.payload...),
	}
	if err := e.Time.UnmarshalJSON(r.time); err != nil {
		return events.Envelope{}, false
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
	return e, true
}

// reuse returns field(prev) when it equals b, else b as a new string.
func reuse(b []byte, prev *events.Envelope, field func(*events.Envelope) string) string {
	if len(b) == 0 {
		return ""
	}
	if prev != nil {
		if s := field(prev); s == string(b) {
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
		l := link{seq: r.seq, prev: r.prev, hash: r.hash}
		if err := l.time.UnmarshalJSON(r.time); err == nil {
			return l, nil
		}
	}
	e, err := decodeEnvelope(v)
	if err != nil {
		return link{}, err
	}
	return link{seq: e.Seq, time: e.Time, prev: []byte(e.PrevHash), hash: []byte(e.Hash)}, nil
}

// internKind returns the constant for a known kind, so decoding one
// does not allocate.
func internKind(b []byte) string {
	switch string(b) { // no allocation: the compiler compares in place
	case events.KindSweepCompleted:
		return events.KindSweepCompleted
	case events.KindClockTicked:
		return events.KindClockTicked
	case events.KindPortScanCompleted:
		return events.KindPortScanCompleted
	case events.KindDeviceEdited:
		return events.KindDeviceEdited
	case events.KindDeviceWatchSet:
		return events.KindDeviceWatchSet
	case events.KindRetentionPurged:
		return events.KindRetentionPurged
	}
	return string(b)
}

// maxDepth bounds the nesting the parser follows before it hands the
// value to encoding/json (whose own limit is 10,000).
const maxDepth = 200

// envParser is a cursor over a stored value.
type envParser struct {
	b []byte
	i int
}

// lit consumes s if the input continues with it.
func (p *envParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// uint parses a JSON integer without sign that fits a uint64.
func (p *envParser) uint() (uint64, bool) {
	start := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
		p.i++
	}
	digits := p.i - start
	if digits == 0 || (digits > 1 && p.b[start] == '0') || p.numberGoesOn() {
		return 0, false
	}
	return n, true
}

// int parses a JSON integer that fits an int32 (so any int).
func (p *envParser) int() (int64, bool) {
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	n, ok := p.uint()
	if !ok || n > 1<<31-1 {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// numberGoesOn reports a fraction or exponent after an integer's digits,
// which the integer fields hand to encoding/json.
func (p *envParser) numberGoesOn() bool {
	if p.i >= len(p.b) {
		return false
	}
	c := p.b[p.i]
	return c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9')
}

// str parses a string without escapes or control characters whose bytes
// are valid UTF-8 (so that json.Unmarshal would keep them as they are),
// returning its contents.
func (p *envParser) str() ([]byte, bool) {
	b, i := p.b, p.i
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	i++
	start := i
	ascii := true
	for ; i < len(b); i++ {
		for i < len(b) && strClass[b[i]] == plain {
			i++
		}
		if i >= len(b) {
			return nil, false
		}
		switch strClass[b[i]] {
		case quote:
			p.i = i + 1
			s := b[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case high:
			ascii = false
		default: // escape or control character
			return nil, false
		}
	}
	return nil, false
}

// Classes of bytes inside a JSON string.
const (
	plain   = 0 // stands for itself
	quote   = 1 // ends the string
	special = 2 // backslash or control character
	high    = 4 // part of a multi-byte UTF-8 sequence (stands for itself too)
)

// strClass classifies every byte for the string scanners.
var strClass = func() (c [256]uint8) {
	for b := range c {
		switch {
		case b == '"':
			c[b] = quote
		case b == '\\' || b < 0x20:
			c[b] = special
		case b >= utf8.RuneSelf:
			c[b] = high
		}
	}
	return c
}()

// ws skips JSON whitespace.
func (p *envParser) ws() {
	i := p.i
	for i < len(p.b) && (p.b[i] == ' ' || p.b[i] == '\t' || p.b[i] == '\n' || p.b[i] == '\r') {
		i++
	}
	p.i = i
}

// value skips one JSON value, checking it as encoding/json's scanner
// does (a payload is kept raw, but must be valid JSON). Whitespace
// before and after it is not consumed.
func (p *envParser) value(depth int) bool {
	if p.i >= len(p.b) || depth > maxDepth {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return true
		}
		for {
			if !p.anyString() {
				return false
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
			if !p.value(depth + 1) {
				return false
			}
			p.ws()
			if p.i >= len(p.b) {
				return false
			}
			switch p.b[p.i] {
			case ',':
				p.i++
				p.ws()
			case '}':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		p.i++
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return true
		}
		for {
			if !p.value(depth + 1) {
				return false
			}
			p.ws()
			if p.i >= len(p.b) {
				return false
			}
			switch p.b[p.i] {
			case ',':
				p.i++
				p.ws()
			case ']':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return p.anyString()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	}
	return false
}

// anyString skips a JSON string, escapes included.
func (p *envParser) anyString() bool {
	b, i := p.b, p.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	for i++; i < len(b); i++ {
		for i < len(b) && strClass[b[i]]&^high == plain {
			i++ // the run of bytes that stand for themselves
		}
		if i >= len(b) {
			return false
		}
		c := b[i]
		switch strClass[c] {
		case quote:
			p.i = i + 1
			return true
		default:
			if c != '\\' || i+1 >= len(b) {
				return false // control character, or a backslash at the end
			}
			i++
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number skips a JSON number.
func (p *envParser) number() bool {
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i >= len(p.b):
		return false
	case p.b[p.i] == '0':
		p.i++
	case p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

// digits skips decimal digits and returns how many.
func (p *envParser) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
