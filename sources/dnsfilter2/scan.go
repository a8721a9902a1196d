package dnsfilter2

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The query log is the bulk of what a read parses, and encoding/json
// validates every byte of the fields it skips (client_info, rules, ...):
// fastLog reads a page with a small scanner that takes only the fields
// entry needs and skips the rest. Anything it does not take as plainly
// valid (an escape, a key in another case, a duplicate, a bad byte) makes it
// give up, and parseLog then decodes with encoding/json, which gives the
// same result or the error to report.

var errSlow = errors.New("not for the fast path")

type scanner struct {
	b []byte
	i int
	// ascii says the last string read was all ASCII.
	ascii bool
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errSlow
	}
	s.i++
	return nil
}

// str reads a string without escapes as a slice of the input; a string
// with escapes or bytes that are not plain UTF-8 gives up.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errSlow
	}
	start := s.i + 1
	ascii := true
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			v := s.b[start:j]
			if !ascii && !utf8.Valid(v) {
				return nil, errSlow
			}
			s.ascii = ascii
			return v, nil
		case c == '\\' || c < 0x20:
			return nil, errSlow
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, errSlow
}

// skip passes over one value of any kind.
func (s *scanner) skip(depth int) error {
	if depth > 64 {
		return errSlow
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return errSlow
}

func (s *scanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return errSlow
	}
	s.i += len(w)
	return nil
}

// number passes over a number as JSON writes it.
func (s *scanner) number() error {
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return errSlow
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if digits() == 0 {
			return errSlow
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return errSlow
		}
	}
	s.i = j
	return nil
}

// object calls field with each key; field reads or skips its value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSlow
		}
	}
}

func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSlow
		}
	}
}

// text reads a string field (null as "", as encoding/json leaves it).
func (s *scanner) text(dst *string) error {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	v, err := s.str()
	if err != nil {
		return err
	}
	*dst = string(v)
	return nil
}

// otherCase reports a key that is not one of fields but that
// encoding/json would match to one of them (it matches keys with
// bytes.EqualFold when no key is exact): the fast path gives up on it.
func (s *scanner) otherCase(k []byte, fields ...string) bool {
	for _, f := range fields {
		// An ASCII key folds only to a key of its length.
		if (!s.ascii || len(k) == len(f)) && string(k) != f && bytes.EqualFold(k, []byte(f)) {
			return true
		}
	}
	return false
}

// fastLog decodes a page of /control/querylog, or returns errSlow.
func fastLog(b []byte) (*logPage, error) {
	s := &scanner{b: b}
	var p logPage
	seen := 0
	err := s.object(func(k []byte) error {
		if s.otherCase(k, "data", "oldest") {
			return errSlow
		}
		bit := 0
		switch string(k) {
		case "data":
			bit = 1
		case "oldest":
			bit = 2
		}
		if seen&bit != 0 {
			return errSlow // a duplicate: encoding/json merges them
		}
		seen |= bit
		switch string(k) {
		case "data":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			return s.array(func() error {
				p.Data = append(p.Data, entry{})
				return s.entry(&p.Data[len(p.Data)-1])
			})
		case "oldest":
			return s.text(&p.Oldest)
		}
		return s.skip(0)
	})
	if err != nil {
		return nil, err
	}
	if s.ws(); s.i != len(s.b) {
		return nil, errSlow
	}
	return &p, nil
}

func (s *scanner) entry(e *entry) error {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	seen := 0
	return s.object(func(k []byte) error {
		if s.otherCase(k, "time", "client", "question", "reason", "answer") {
			return errSlow
		}
		bit := 0
		switch string(k) {
		case "time":
			bit = 1
		case "client":
			bit = 2
		case "question":
			bit = 4
		case "reason":
			bit = 8
		case "answer":
			bit = 16
		}
		if seen&bit != 0 {
			return errSlow
		}
		seen |= bit
		switch string(k) {
		case "time":
			return s.text(&e.Time)
		case "client":
			return s.text(&e.Client)
		case "reason":
			return s.text(&e.Reason)
		case "question":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			qs := 0
			return s.object(func(k []byte) error {
				if s.otherCase(k, "name", "type") {
					return errSlow
				}
				switch string(k) {
				case "name", "type":
					b := 1
					if string(k) == "type" {
						b = 2
					}
					if qs&b != 0 {
						return errSlow
					}
					qs |= b
					if string(k) == "name" {
						return s.text(&e.Question.Name)
					}
					return s.text(&e.Question.Type)
				}
				return s.skip(1)
			})
		case "answer":
			if s.peek() == 'n' {
				return s.lit("null")
			}
			return s.array(func() error {
				e.Answer = append(e.Answer, answer{})
				a := &e.Answer[len(e.Answer)-1]
				if s.peek() == 'n' {
					return s.lit("null")
				}
				as := 0
				return s.object(func(k []byte) error {
					if s.otherCase(k, "type", "value") {
						return errSlow
					}
					switch string(k) {
					case "type":
						if as&1 != 0 {
							return errSlow
						}
						as |= 1
						return s.text(&a.Type)
					case "value":
						if as&2 != 0 {
							return errSlow
						}
						as |= 2
						s.ws()
						start := s.i
						if err := s.skip(2); err != nil {
							return err
						}
						a.Value = json.RawMessage(s.b[start:s.i:s.i])
						return nil
					}
					return s.skip(2)
				})
			})
		}
		return s.skip(1)
	})
}
