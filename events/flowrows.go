package events

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
)

// TrafficRowAddrs is one row of a traffic.recorded payload with its
// addresses parsed: what [EachTrafficRow] hands over.
type TrafficRowAddrs struct {
	Src, Dst              netip.Addr
	Proto                 uint8
	Port                  uint16
	Bytes, Packets, Flows uint64
}

// EachTrafficRow calls fn with every row of a traffic.recorded payload
// (v2's packed rows or v1's array: see [TrafficRows]), in order, without
// materialising the rows: a window of 100,000 rows decoded into
// []TrafficRow is about 10 MB of structs and strings, which a reader that
// folds the rows as they come never needs. Rows whose addresses do not
// parse are skipped (ingest never writes them). A payload off the fast
// path (escapes, unusual numbers) is decoded with encoding/json instead,
// with the same result. An error from fn stops the walk and is returned.
func EachTrafficRow(payload []byte, fn func(*TrafficRowAddrs) error) error {
	var ferr error
	var r TrafficRowAddrs
	handed, rowsSeen, dupRows := 0, false, false
	s := NewJSONScanner(payload)
	fast := s.object(func(key []byte) bool {
		if string(key) != "rows" {
			var skip []byte
			return s.RawValue(&skip)
		}
		if rowsSeen {
			dupRows = true
			return false
		}
		rowsSeen = true
		s.ws()
		if s.Lit("null") {
			return true
		}
		if s.i < len(s.b) && s.b[s.i] == '"' { // v2: packed
			var str []byte
			if !s.PlainString(&str) {
				return false
			}
			ferr = eachPackedRow(str, &r, fn)
			return ferr == nil
		}
		return s.array(func() bool {
			ok, valid := scanTrafficRow(&s, &r)
			if !ok {
				return false
			}
			if valid {
				if ferr = fn(&r); ferr != nil {
					return false
				}
				handed++
			}
			return true
		})
	}) && s.End()
	if ferr != nil {
		return ferr
	}
	if fast {
		return nil
	}
	// Off the fast path, possibly after handing over the first rows:
	// encoding/json decodes the same rows in the same order, so those are
	// skipped. (A second "rows" key, which encoding/json would take
	// instead, is refused: ingest never writes one.)
	if dupRows {
		return fmt.Errorf("events: traffic rows: %w", errRepeatedRows)
	}
	var p struct {
		Rows TrafficRows `json:"rows"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("events: traffic rows: %w", err)
	}
	for _, row := range p.Rows {
		src, err1 := netip.ParseAddr(row.Src)
		dst, err2 := netip.ParseAddr(row.Dst)
		if err1 != nil || err2 != nil {
			continue
		}
		if handed > 0 {
			handed--
			continue
		}
		r = TrafficRowAddrs{Src: src, Dst: dst, Proto: row.Proto, Port: row.Port, Bytes: row.Bytes, Packets: row.Packets, Flows: row.Flows}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// PackedTrafficRows returns the rows of a traffic.recorded payload
// packed as v2 packs them (decoded from base64; a v1 payload's rows
// packed here), rows whose addresses do not parse left out as
// [EachTrafficRow] leaves them. A reader that walks a window's rows more
// than once, or in another order, walks these with [NextTrafficRow]
// (a row's offset in them names it) rather than decoding the payload
// each time.
func PackedTrafficRows(payload []byte) ([]byte, error) {
	if raw, ok := packedString(payload); ok {
		// v2 on the fast path: its rows as written, once checked.
		var r TrafficRowAddrs
		for rest := raw; len(rest) > 0; {
			var err error
			if rest, err = unpackRow(rest, &r); err != nil {
				return nil, err
			}
		}
		return raw, nil
	}
	// v2's rows are about three quarters of the payload (base64), v1's
	// fewer: made once rather than grown by copying.
	raw := make([]byte, 0, len(payload)*3/4+16)
	n := 0
	err := EachTrafficRow(payload, func(r *TrafficRowAddrs) error {
		r.Src, r.Dst = r.Src.WithZone(""), r.Dst.WithZone("")
		b, err := appendPackedAddrs(raw, r)
		if err != nil {
			return fmt.Errorf("events: traffic row %d: %w", n, err)
		}
		raw = b
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// packedString returns the decoded base64 of a payload's rows when they
// are v2's packed string on EachTrafficRow's fast path (one "rows" key,
// a plain string), the rows EachTrafficRow would walk; ok is false
// otherwise.
func packedString(payload []byte) (raw []byte, ok bool) {
	var str []byte
	found := false
	s := NewJSONScanner(payload)
	ok = s.object(func(key []byte) bool {
		if string(key) != "rows" {
			var skip []byte
			return s.RawValue(&skip)
		}
		if found {
			return false // a second "rows": left to EachTrafficRow to refuse
		}
		found = true
		s.ws()
		return s.i < len(s.b) && s.b[s.i] == '"' && s.PlainString(&str)
	}) && s.End()
	if !ok || !found {
		return nil, false
	}
	raw = make([]byte, base64.StdEncoding.DecodedLen(len(str)))
	n, err := base64.StdEncoding.Decode(raw, str)
	if err != nil {
		return nil, false
	}
	return raw[:n], true
}

// NextTrafficRow reads the first of packed rows (from
// [PackedTrafficRows]) into *r and returns the rest.
func NextTrafficRow(packed []byte, r *TrafficRowAddrs) ([]byte, error) {
	return unpackRow(packed, r)
}

// eachPackedRow calls fn with each of v2's packed rows, given as base64.
func eachPackedRow(b64 []byte, r *TrafficRowAddrs, fn func(*TrafficRowAddrs) error) error {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(raw, b64)
	if err != nil {
		return fmt.Errorf("events: traffic rows: %w", err)
	}
	for rest := raw[:n]; len(rest) > 0; {
		if rest, err = unpackRow(rest, r); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

var errRepeatedRows = errors.New(`repeated key "rows"`)

// scanTrafficRow reads one row object into *r. ok is false when the row
// is off the fast path; valid is false when its addresses do not parse.
func scanTrafficRow(s *JSONScanner, r *TrafficRowAddrs) (ok, valid bool) {
	*r = TrafficRowAddrs{}
	var seen uint
	var src, dst []byte
	ok = s.object(func(key []byte) bool {
		var bit uint
		var n uint64
		switch string(key) {
		case "s":
			bit = 1
			if !s.PlainString(&src) {
				return false
			}
		case "d":
			bit = 2
			if !s.PlainString(&dst) {
				return false
			}
		case "p", "port", "b", "n", "f":
			if !s.Uint(&n) {
				return false
			}
			switch key[0] {
			case 'p':
				if len(key) == 1 {
					bit = 4
					if n > 255 {
						return false
					}
					r.Proto = uint8(n)
				} else {
					bit = 8
					if n > 65535 {
						return false
					}
					r.Port = uint16(n)
				}
			case 'b':
				bit, r.Bytes = 16, n
			case 'n':
				bit, r.Packets = 32, n
			case 'f':
				bit, r.Flows = 64, n
			}
		default:
			return false // unknown key: encoding/json decides
		}
		if seen&bit != 0 {
			return false // repeated key: encoding/json decides
		}
		seen |= bit
		return true
	})
	if !ok {
		return false, false
	}
	var e1, e2 bool
	r.Src, e1 = parseAddrBytes(src)
	r.Dst, e2 = parseAddrBytes(dst)
	return true, e1 && e2
}

// parseAddrBytes parses a dotted IPv4 address without allocating, and
// anything else with netip.ParseAddr.
func parseAddrBytes(b []byte) (netip.Addr, bool) {
	var v4 [4]byte
	part, digits, n := 0, 0, 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || part > 3 || (i < len(b) && part == 3) {
				goto slow
			}
			v4[part] = byte(n)
			part, digits, n = part+1, 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || (digits == 1 && n == 0) { // no leading zeros, as netip
			goto slow
		}
		n = n*10 + int(c-'0')
		digits++
		if n > 255 {
			goto slow
		}
	}
	if part == 4 {
		return netip.AddrFrom4(v4), true
	}
slow:
	a, err := netip.ParseAddr(string(b))
	return a, err == nil
}
