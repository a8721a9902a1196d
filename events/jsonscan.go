package events

import (
	"bytes"
	"math"
	"time"
	"unicode/utf8"
)

// JSONScanner is a cursor over JSON text for the hand-written decoders
// on the replay path: this package's payload parsers and the store's
// envelope decoder. It reads only what encoding/json would decode
// verbatim (strings without escapes, plain integers, true and false), so
// a decoder built on it produces exactly json.Unmarshal's result, and
// hands everything else to encoding/json.
//
// Every method but Lit skips whitespace before what it reads, and
// reports whether it could. A method that returns false has left the
// cursor, and the destination it was given, anywhere: the caller gives up
// on the fast path. No input makes a method panic.
type JSONScanner struct {
	b []byte
	i int
}

// NewJSONScanner returns a scanner at the start of b.
func NewJSONScanner(b []byte) JSONScanner {
	return JSONScanner{b: b}
}

// Lit consumes lit if the input continues with exactly lit.
func (s *JSONScanner) Lit(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// Next reports whether the next byte after whitespace is c, consuming it
// if so.
func (s *JSONScanner) Next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c { // compact JSON: no whitespace
		s.i++
		return true
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// End reports whether only whitespace is left.
func (s *JSONScanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// ws skips JSON whitespace.
func (s *JSONScanner) ws() {
	i := s.i
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	s.i = i
}

// PlainString reads a string without escapes or control characters
// whose bytes are valid UTF-8 (so json.Unmarshal keeps it as it is) into
// *dst: its contents, pointing into the input.
func (s *JSONScanner) PlainString(dst *[]byte) bool {
	str, ok := s.plainString()
	*dst = str
	return ok
}

// plainString is PlainString returning the contents, which is what the
// decoders in this package want.
func (s *JSONScanner) plainString() ([]byte, bool) {
	if !s.Next('"') {
		return nil, false
	}
	b, i := s.b, s.i
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
			s.i = i + 1
			if !ascii && !utf8.Valid(b[start:i]) {
				return nil, false
			}
			return b[start:i], true
		case high:
			ascii = false
		default: // escape or control character
			return nil, false
		}
	}
	return nil, false
}

// Time reads a plain string into *dst with time.Time's UnmarshalJSON, as
// json.Unmarshal does.
func (s *JSONScanner) Time(dst *time.Time) bool {
	str, ok := s.plainString()
	if !ok {
		return false
	}
	return dst.UnmarshalJSON(s.b[s.i-len(str)-2:s.i]) == nil // with its quotes
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

// Bool reads true or false into *dst.
func (s *JSONScanner) Bool(dst *bool) bool {
	s.ws()
	switch {
	case s.Lit("true"):
		*dst = true
	case s.Lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// Uint reads an integer without sign, fraction or exponent that fits a
// uint64 into *dst.
func (s *JSONScanner) Uint(dst *uint64) bool {
	s.ws()
	n, ok := s.uint()
	*dst = n
	return ok
}

// Int reads an integer without fraction or exponent that fits an int64
// (but for math.MinInt64) into *dst.
func (s *JSONScanner) Int(dst *int64) bool {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	n, ok := s.uint()
	if !ok || n > math.MaxInt64 {
		return false
	}
	*dst = int64(n)
	if neg {
		*dst = -*dst
	}
	return true
}

// Int64s reads an array of integers, each as Int reads it, into *dst, a
// slice made once at the array's length: grown by appending, the "same"
// of a sweep of 1,000 hosts written by difference took eight slices and
// up to twice its numbers' room, the largest part of a replay's decoded
// batch.
func (s *JSONScanner) Int64s(dst *[]int64) bool {
	s.ws()
	*dst = make([]int64, 0, s.numbersAhead())
	return s.array(func() bool {
		var n int64
		if !s.Int(&n) {
			return false
		}
		*dst = append(*dst, n)
		return true
	})
}

// numbersAhead is how many elements the array of numbers at the
// scanner holds, counted by its commas up to the first ']' (16 when it
// is not one: the parse then fails, or finds out). Each element takes
// at least two bytes, so the count is bounded by the input's length.
func (s *JSONScanner) numbersAhead() int {
	rest := s.b[s.i:]
	end := bytes.IndexByte(rest, ']')
	if end < 0 || len(rest) == 0 || rest[0] != '[' {
		return 16
	}
	body := rest[1:end]
	if len(bytes.TrimSpace(body)) == 0 {
		return 0
	}
	return bytes.Count(body, []byte{','}) + 1
}

// uint reads the digits of Uint.
func (s *JSONScanner) uint() (uint64, bool) {
	const cutoff = math.MaxUint64 / 10
	b, start := s.b, s.i
	i := start
	var n uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n >= cutoff && (n > cutoff || d > math.MaxUint64%10) {
			return 0, false
		}
		n = n*10 + d
	}
	s.i = i
	digits := i - start
	if digits == 0 || (digits > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) {
		if c := b[i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false // a number, but not a plain integer
		}
	}
	return n, true
}

// maxDepth bounds the nesting RawValue follows before it gives up
// (encoding/json's own limit is 10,000).
const maxDepth = 200

// RawValue reads one JSON value of any kind, checking it as
// encoding/json's scanner does, into *dst: its bytes (without the
// whitespace around it), pointing into the input.
func (s *JSONScanner) RawValue(dst *[]byte) bool {
	s.ws()
	start := s.i
	if !s.value(0) {
		return false
	}
	*dst = s.b[start:s.i]
	return true
}

// value skips the value at the cursor, nested depth deep.
func (s *JSONScanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == end {
			s.i++
			return true
		}
		for {
			if c == '{' { // a member: a key and a colon first
				if !s.anyString() {
					return false
				}
				s.ws()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return false
				}
				s.i++
				s.ws()
			}
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case ',':
				s.i++
				s.ws()
			case end:
				s.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return s.anyString()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.Lit("true")
	case c == 'f':
		return s.Lit("false")
	case c == 'n':
		return s.Lit("null")
	}
	return false
}

// anyString skips a string at the cursor, escapes included.
func (s *JSONScanner) anyString() bool {
	b, i := s.b, s.i
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
		if strClass[c] == quote {
			s.i = i + 1
			return true
		}
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
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number skips a number at the cursor.
func (s *JSONScanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// digits skips decimal digits and returns how many.
func (s *JSONScanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// object reads an object, calling member with each key (a plain string's
// contents) positioned at its value.
func (s *JSONScanner) object(member func(key []byte) bool) bool {
	if !s.Next('{') {
		return false
	}
	if s.Next('}') {
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.Next(':') || !member(key) {
			return false
		}
		if !s.Next(',') {
			return s.Next('}')
		}
	}
}

// array reads an array, calling elem positioned at each element.
func (s *JSONScanner) array(elem func() bool) bool {
	if !s.Next('[') {
		return false
	}
	if s.Next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !s.Next(',') {
			return s.Next(']')
		}
	}
}
