package scanlog

import (
	"time"

	"github.com/jocasta/jocasta/events"
)

// sweepHead is what the scan log reads of a sweep.completed: its header,
// its references to the previous sweep, and how many hosts it holds whole
// (not the hosts themselves).
type sweepHead struct {
	ScanID     string
	Started    time.Time
	Finished   time.Time
	Networks   []string
	ProbesSent int
	Complete   bool
	Errors     []string
	Base       uint64
	Same       []int64
	Hosts      int
}

// scanSweepHead reads p (a sweep.completed payload of the current
// version) into h, skipping over each host instead of decoding it: the
// hosts are most of a sweep's bytes and all of its decoding. It reports
// false for anything it does not read exactly as encoding/json would
// (escaped strings, unknown keys, repeated keys, other types), and the
// caller decodes with encoding/json instead. The hosts' contents are not
// checked: the inventory, which reads them, refuses a sweep whose hosts
// do not decode, and that stops the replay for every projection.
func scanSweepHead(p []byte, h *sweepHead) bool {
	s := events.NewJSONScanner(p)
	if !s.Next('{') {
		return false
	}
	if s.Next('}') {
		return s.End()
	}
	var seen uint16
	once := func(bit uint16) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	for {
		var key, str []byte
		if !s.PlainString(&key) || !s.Next(':') {
			return false
		}
		ok := false
		switch string(key) {
		case "scan_id":
			ok = once(1) && s.PlainString(&str)
			h.ScanID = string(str)
		case "started":
			ok = once(2) && s.Time(&h.Started)
		case "finished":
			ok = once(4) && s.Time(&h.Finished)
		case "networks":
			ok = once(8) && plainStrings(&s, &h.Networks)
		case "probes_sent":
			var n int64
			ok = once(16) && s.Int(&n) && n == int64(int(n))
			h.ProbesSent = int(n)
		case "complete":
			ok = once(32) && s.Bool(&h.Complete)
		case "errors":
			ok = once(64) && plainStrings(&s, &h.Errors)
		case "base":
			ok = once(128) && s.Uint(&h.Base)
		case "same":
			ok = once(256) && ints(&s, &h.Same)
		case "hosts":
			ok = once(512) && countValues(&s, &h.Hosts)
		}
		if !ok {
			return false
		}
		if s.Next('}') {
			return s.End()
		}
		if !s.Next(',') {
			return false
		}
	}
}

// array reads a JSON array (or null), calling elem for each element.
func array(s *events.JSONScanner, elem func() bool) bool {
	if s.Lit("null") {
		return true
	}
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
		if s.Next(']') {
			return true
		}
		if !s.Next(',') {
			return false
		}
	}
}

// plainStrings reads an array of plain strings: nil for null, empty for
// [], as encoding/json does.
func plainStrings(s *events.JSONScanner, dst *[]string) bool {
	if s.Lit("null") {
		*dst = nil
		return true
	}
	out := []string{}
	ok := array(s, func() bool {
		var b []byte
		if !s.PlainString(&b) {
			return false
		}
		out = append(out, string(b))
		return true
	})
	*dst = out
	return ok
}

// ints reads an array of integers: nil for null, empty for [].
func ints(s *events.JSONScanner, dst *[]int64) bool {
	if s.Lit("null") {
		*dst = nil
		return true
	}
	return s.Int64s(dst)
}

// countValues counts an array's elements, checking each is a JSON
// object or null (what encoding/json decodes into a struct).
func countValues(s *events.JSONScanner, n *int) bool {
	var skip []byte
	return array(s, func() bool {
		*n++
		return s.RawValue(&skip) && (skip[0] == '{' || string(skip) == "null")
	})
}
