package events

import (
	"time"
	"unicode/utf8"
)

// The payloads a replay is made of (sweep.completed, clock.ticked) are
// decoded by hand-written parsers, several times faster than
// encoding/json. They take any field order and whitespace, but hand
// everything unusual to encoding/json: escapes in strings, invalid UTF-8,
// null, unknown or repeated or differently cased keys, numbers that are
// not plain integers or do not fit, anything invalid. So the result, or
// the error, is always exactly json.Unmarshal's (FuzzFastDecode compares
// the two).

// fastDecode decodes p into dst when dst is a payload type with a fast
// parser, is zero (json.Unmarshal merges into what is there), and p is on
// the fast path. It reports whether it did; if not, dst is untouched.
func fastDecode(p []byte, dst any) bool {
	switch dst := dst.(type) {
	case *SweepCompleted:
		if !dst.isZero() {
			return false
		}
		var v SweepCompleted
		if !decodeSweepCompleted(p, &v) {
			return false
		}
		*dst = v
		return true
	case *ClockTicked:
		if *dst != (ClockTicked{}) {
			return false
		}
		var v ClockTicked
		if !decodeClockTicked(p, &v) {
			return false
		}
		*dst = v
		return true
	}
	return false
}

func (p *SweepCompleted) isZero() bool {
	return p.ScanID == "" && p.Started == (time.Time{}) && p.Finished == (time.Time{}) &&
		p.Networks == nil && p.ProbesSent == 0 && !p.Complete && p.Errors == nil && p.Hosts == nil
}

// decodeClockTicked parses a ClockTicked payload.
func decodeClockTicked(b []byte, p *ClockTicked) bool {
	d := jdec{b: b}
	var seen uint
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "at":
			return d.once(&seen, 0) && d.time(&p.At)
		}
		return false
	})
	return ok && d.end()
}

// decodeSweepCompleted parses a SweepCompleted payload.
func decodeSweepCompleted(b []byte, p *SweepCompleted) bool {
	d := jdec{b: b}
	var seen uint
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "scan_id":
			return d.once(&seen, 0) && d.str(&p.ScanID)
		case "started":
			return d.once(&seen, 1) && d.time(&p.Started)
		case "finished":
			return d.once(&seen, 2) && d.time(&p.Finished)
		case "networks":
			return d.once(&seen, 3) && d.strings(&p.Networks)
		case "probes_sent":
			if !d.once(&seen, 4) {
				return false
			}
			n, ok := d.int()
			p.ProbesSent = int(n)
			return ok
		case "complete":
			return d.once(&seen, 5) && d.bool(&p.Complete)
		case "errors":
			return d.once(&seen, 6) && d.strings(&p.Errors)
		case "hosts":
			if !d.once(&seen, 7) {
				return false
			}
			// Decode into a small array first so the slice is allocated
			// once at its size (a sweep of a few hosts is the common case).
			var small [4]SweepHost
			hosts := small[:0]
			ok := d.array(func() bool {
				hosts = append(hosts, SweepHost{})
				return d.sweepHost(&hosts[len(hosts)-1])
			})
			p.Hosts = append(make([]SweepHost, 0, len(hosts)), hosts...)
			return ok
		}
		return false
	})
	return ok && d.end()
}

// sweepHost parses one SweepHost.
func (d *jdec) sweepHost(h *SweepHost) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "ip":
			return d.once(&seen, 0) && d.str(&h.IP)
		case "network":
			return d.once(&seen, 1) && d.str(&h.Network)
		case "mac":
			return d.once(&seen, 2) && d.str(&h.MAC)
		case "rtt_us":
			if !d.once(&seen, 3) {
				return false
			}
			n, ok := d.int()
			h.RTTMicros = n
			return ok
		case "via":
			return d.once(&seen, 4) && d.str(&h.Via)
		case "names":
			if !d.once(&seen, 5) {
				return false
			}
			h.Names = make(map[string]string, 2)
			return d.object(func(key []byte) bool {
				k, ok := d.keyString(key)
				if !ok {
					return false
				}
				var v string
				if !d.str(&v) {
					return false
				}
				h.Names[k] = v
				return true
			})
		case "services":
			if !d.once(&seen, 6) {
				return false
			}
			h.Services = make([]Service, 0, 2)
			return d.array(func() bool {
				h.Services = append(h.Services, Service{})
				return d.service(&h.Services[len(h.Services)-1])
			})
		case "upnp":
			if !d.once(&seen, 7) {
				return false
			}
			h.UPnP = &UPnP{}
			return d.upnp(h.UPnP)
		}
		return false
	})
}

// service parses one Service.
func (d *jdec) service(s *Service) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "instance":
			return d.once(&seen, 0) && d.str(&s.Instance)
		case "type":
			return d.once(&seen, 1) && d.str(&s.Type)
		case "port":
			if !d.once(&seen, 2) {
				return false
			}
			n, ok := d.int()
			if !ok || n < 0 || n > 1<<16-1 {
				return false
			}
			s.Port = uint16(n)
			return true
		}
		return false
	})
}

// upnp parses a UPnP description.
func (d *jdec) upnp(u *UPnP) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "friendly_name":
			return d.once(&seen, 0) && d.str(&u.FriendlyName)
		case "manufacturer":
			return d.once(&seen, 1) && d.str(&u.Manufacturer)
		case "model_name":
			return d.once(&seen, 2) && d.str(&u.ModelName)
		}
		return false
	})
}

// jdec is a cursor over a payload. Every method returns false when the
// input is not on the fast path.
type jdec struct {
	b      []byte
	i      int
	recent [4]string // strings decoded lately, shared when repeated
	slot   int
}

// once marks field bit of seen, failing on a repeated key (which
// json.Unmarshal would merge or overwrite).
func (d *jdec) once(seen *uint, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

// ws skips JSON whitespace.
func (d *jdec) ws() {
	i := d.i
	for i < len(d.b) && (d.b[i] == ' ' || d.b[i] == '\t' || d.b[i] == '\n' || d.b[i] == '\r') {
		i++
	}
	d.i = i
}

// end reports whether only whitespace is left.
func (d *jdec) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// next skips whitespace and reports whether the next byte is c,
// consuming it if so.
func (d *jdec) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c { // compact JSON: no whitespace
		d.i++
		return true
	}
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// rawString returns the contents of a string without escapes or control
// characters that is valid UTF-8 (so json.Unmarshal keeps it as is).
func (d *jdec) rawString() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	b, i := d.b, d.i
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
			d.i = i + 1
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
	high    = 4 // part of a multi-byte UTF-8 sequence
)

// strClass classifies every byte for rawString.
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

// str parses a string into *s.
func (d *jdec) str(s *string) bool {
	b, ok := d.rawString()
	if ok {
		*s = d.intern(b)
	}
	return ok
}

// keyString is a map key as a string.
func (d *jdec) keyString(key []byte) (string, bool) {
	return d.intern(key), true
}

// intern returns b as a string, sharing it with a constant or a string
// decoded lately when equal (a sweep repeats its network on every host),
// so that repeated strings are allocated once.
func (d *jdec) intern(b []byte) string {
	if s, ok := constant(b); ok {
		return s
	}
	for _, s := range d.recent {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	d.recent[d.slot] = s
	d.slot = (d.slot + 1) % len(d.recent)
	return s
}

// constant returns a constant for strings sweeps repeat.
func constant(b []byte) (string, bool) {
	switch string(b) {
	case "":
		return "", true
	case "icmp":
		return "icmp", true
	case "arp":
		return "arp", true
	case "neighbour":
		return "neighbour", true
	case "dns":
		return "dns", true
	case "mdns":
		return "mdns", true
	case "netbios":
		return "netbios", true
	case "dnssd":
		return "dnssd", true
	case "ssdp":
		return "ssdp", true
	case "dhcp":
		return "dhcp", true
	case "router":
		return "router", true
	}
	return "", false
}

// strings parses an array of strings.
func (d *jdec) strings(ss *[]string) bool {
	*ss = make([]string, 0, 1)
	return d.array(func() bool {
		var s string
		if !d.str(&s) {
			return false
		}
		*ss = append(*ss, s)
		return true
	})
}

// time parses a string with time.Time's UnmarshalJSON, as json.Unmarshal
// does.
func (d *jdec) time(t *time.Time) bool {
	d.ws()
	start := d.i
	if _, ok := d.rawString(); !ok {
		return false
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

// bool parses true or false.
func (d *jdec) bool(v *bool) bool {
	d.ws()
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		*v = true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		*v = false
	default:
		return false
	}
	return true
}

// int parses a plain JSON integer (no fraction or exponent) that fits an
// int64.
func (d *jdec) int() (int64, bool) {
	d.ws()
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
	}
	start := d.i
	var n uint64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		n = n*10 + uint64(d.b[d.i]-'0')
		d.i++
		if d.i-start > 18 { // could overflow: leave it to encoding/json
			return 0, false
		}
	}
	digits := d.i - start
	if digits == 0 || (digits > 1 && d.b[start] == '0') {
		return 0, false
	}
	if d.i < len(d.b) {
		if c := d.b[d.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// object parses an object, calling member with each key (raw, without
// escapes) positioned at its value.
func (d *jdec) object(member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.rawString()
		if !ok || !d.next(':') || !member(key) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// array parses an array, calling elem positioned at each element.
func (d *jdec) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}
