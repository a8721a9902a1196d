package events

import (
	"sync"
	"time"
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
		return fastInto(p, dst, dst.isZero(), decodeSweepCompleted)
	case *ClockTicked:
		return fastInto(p, dst, *dst == ClockTicked{}, decodeClockTicked)
	}
	return false
}

// fastInto decodes p into *dst with decode when dst is zero, leaving *dst
// untouched unless decode succeeds.
func fastInto[T any](p []byte, dst *T, zero bool, decode func([]byte, *T) bool) bool {
	if !zero {
		return false
	}
	var v T
	if !decode(p, &v) {
		return false
	}
	*dst = v
	return true
}

func (p *SweepCompleted) isZero() bool {
	return p.ScanID == "" && p.Started == (time.Time{}) && p.Finished == (time.Time{}) &&
		p.Networks == nil && p.ProbesSent == 0 && !p.Complete && p.Errors == nil && p.Hosts == nil &&
		p.Base == 0 && p.Same == nil
}

// decodeClockTicked parses a ClockTicked payload.
func decodeClockTicked(b []byte, p *ClockTicked) bool {
	d := jdec{JSONScanner: NewJSONScanner(b)}
	var seen uint
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "at":
			return d.once(&seen, 0) && d.Time(&p.At)
		}
		return false
	})
	return ok && d.End()
}

// decodeSweepCompleted parses a SweepCompleted payload.
func decodeSweepCompleted(b []byte, p *SweepCompleted) bool {
	t := hostStrings.Get().(*stringTable)
	defer hostStrings.Put(t)
	d := jdec{JSONScanner: NewJSONScanner(b), hosts: t}
	var seen uint
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "scan_id":
			return d.once(&seen, 0) && d.str(&p.ScanID)
		case "started":
			return d.once(&seen, 1) && d.Time(&p.Started)
		case "finished":
			return d.once(&seen, 2) && d.Time(&p.Finished)
		case "networks":
			return d.once(&seen, 3) && d.strings(&p.Networks)
		case "probes_sent":
			return d.once(&seen, 4) && setInt(&d, &p.ProbesSent)
		case "complete":
			return d.once(&seen, 5) && d.Bool(&p.Complete)
		case "errors":
			return d.once(&seen, 6) && d.strings(&p.Errors)
		case "hosts":
			return d.once(&seen, 7) && d.sweepHosts(&p.Hosts)
		case "base":
			return d.once(&seen, 8) && d.Uint(&p.Base)
		case "same":
			return d.once(&seen, 9) && d.Int64s(&p.Same)
		}
		return false
	})
	return ok && d.End()
}

// sweepHosts parses an array of SweepHost.
func (d *jdec) sweepHosts(hs *[]SweepHost) bool {
	// A whole sweep that found nobody: nil, as encoding/json leaves it.
	if d.Lit("null") {
		*hs = nil
		return true
	}
	// Decode into a small array first so the slice is allocated once at
	// its size (a sweep of a few hosts is the common case).
	var small [4]SweepHost
	hosts := small[:0]
	ok := d.array(func() bool {
		hosts = append(hosts, SweepHost{})
		return d.sweepHost(&hosts[len(hosts)-1])
	})
	*hs = append(make([]SweepHost, 0, len(hosts)), hosts...)
	return ok
}

// sweepHost parses one SweepHost.
func (d *jdec) sweepHost(h *SweepHost) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "ip":
			return d.once(&seen, 0) && d.hostStr(&h.IP)
		case "network":
			return d.once(&seen, 1) && d.hostStr(&h.Network)
		case "mac":
			return d.once(&seen, 2) && d.hostStr(&h.MAC)
		case "rtt_us":
			return d.once(&seen, 3) && setInt(d, &h.RTTMicros)
		case "via":
			return d.once(&seen, 4) && d.hostStr(&h.Via)
		case "names":
			return d.once(&seen, 5) && d.names(&h.Names)
		case "services":
			return d.once(&seen, 6) && d.services(&h.Services)
		case "upnp":
			return d.once(&seen, 7) && d.upnp(&h.UPnP)
		}
		return false
	})
}

// names parses an object of names by resolver (as Names.UnmarshalJSON:
// sorted, a repeated resolver keeping its last name).
func (d *jdec) names(ns *Names) bool {
	*ns = make(Names, 0, 2)
	return d.object(func(key []byte) bool {
		k := d.hosts.get(key)
		var v string
		if !d.hostStr(&v) {
			return false
		}
		ns.Set(k, v)
		return true
	})
}

// services parses an array of Service.
func (d *jdec) services(ss *[]Service) bool {
	*ss = make([]Service, 0, 2)
	return d.array(func() bool {
		*ss = append(*ss, Service{})
		return d.service(&(*ss)[len(*ss)-1])
	})
}

// service parses one Service.
func (d *jdec) service(s *Service) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "instance":
			return d.once(&seen, 0) && d.hostStr(&s.Instance)
		case "type":
			return d.once(&seen, 1) && d.hostStr(&s.Type)
		case "port":
			return d.once(&seen, 2) && setInt(d, &s.Port)
		}
		return false
	})
}

// upnp parses a UPnP description into a new *u.
func (d *jdec) upnp(u **UPnP) bool {
	p := &UPnP{}
	*u = p
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "friendly_name":
			return d.once(&seen, 0) && d.hostStr(&p.FriendlyName)
		case "manufacturer":
			return d.once(&seen, 1) && d.hostStr(&p.Manufacturer)
		case "model_name":
			return d.once(&seen, 2) && d.hostStr(&p.ModelName)
		}
		return false
	})
}

// jdec is a JSONScanner over a payload that reads into fields. Every
// method returns false when the input is not on the fast path.
type jdec struct {
	JSONScanner
	hosts *stringTable // a sweep's host strings, shared across payloads
}

// hostStr parses a string of a host (its address, MAC, names, services)
// or of a sweep's networks and errors into *s, sharing it with the same string of an earlier payload: a
// replay reads the same devices' strings in every sweep, and allocating
// them again for each was a fifth of its allocations.
func (d *jdec) hostStr(s *string) bool {
	b, ok := d.plainString()
	if !ok {
		return false
	}
	*s = d.hosts.get(b)
	return true
}

// stringTable shares strings between payloads: a bounded map from a
// string to its one copy, emptied when full. The tables are pooled (a
// decoder takes one for a payload and puts it back), so that decoders
// on different goroutines never share one.
type stringTable struct{ m map[string]string }

// maxTableStrings bounds a table (about a megabyte of strings); the
// strings of a site's devices fit.
const maxTableStrings = 1 << 14

var hostStrings = sync.Pool{New: func() any { return &stringTable{m: make(map[string]string, 256)} }}

// get returns b as a string, the table's copy when it has one.
func (t *stringTable) get(b []byte) string {
	if s, ok := t.m[string(b)]; ok { // no allocation: the compiler looks up in place
		return s
	}
	if s, ok := constant(b); ok {
		return s
	}
	if len(t.m) >= maxTableStrings {
		clear(t.m)
	}
	s := string(b)
	t.m[s] = s
	return s
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

// str parses a string into *s.
func (d *jdec) str(s *string) bool {
	b, ok := d.plainString()
	if !ok {
		return false
	}
	*s = d.intern(b)
	return true
}

// intern returns b as a string, shared with a constant when it is one
// (a host's strings are shared through d.hosts instead).
func (d *jdec) intern(b []byte) string {
	if s, ok := constant(b); ok {
		return s
	}
	return string(b)
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
		if !d.hostStr(&s) { // networks and errors repeat from sweep to sweep
			return false
		}
		*ss = append(*ss, s)
		return true
	})
}

// setInt parses an integer into *n, failing when it does not fit.
func setInt[T int | int64 | uint16](d *jdec, n *T) bool {
	var v int64
	if !d.Int(&v) || int64(T(v)) != v {
		return false
	}
	*n = T(v)
	return true
}
