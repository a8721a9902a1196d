package events

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// TrafficRows are the rows of a traffic.recorded payload. Since v2 they
// are written as one base64 string of packed rows instead of an array of
// JSON objects: about 20 bytes a row instead of 75, so a window of
// 166,667 rows (10,000 devices × 1,000 peers an hour) is a 3.4 MB event
// instead of 12.5 MB, and writing, storing and reading it costs a
// quarter. Each packed row is
//
//	flags (1: bit 0 source is IPv6, bit 1 destination is IPv6) |
//	source (4 or 16) | destination (4 or 16) | protocol (1) |
//	port, bytes, packets, flows (uvarint each)
//
// Reading accepts both forms (v1's array and v2's string), so the v1 →
// v2 upcast is the identity.
type TrafficRows []TrafficRow

// MarshalJSON writes the rows packed. A row whose addresses do not
// parse is an error (ingest never writes one).
func (rs TrafficRows) MarshalJSON() ([]byte, error) {
	if rs == nil {
		return []byte("null"), nil
	}
	raw := make([]byte, 0, len(rs)*20)
	for i := range rs {
		var err error
		if raw, err = appendPackedRow(raw, &rs[i]); err != nil {
			return nil, fmt.Errorf("events: traffic row %d: %w", i, err)
		}
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(raw))+2)
	out[0], out[len(out)-1] = '"', '"'
	base64.StdEncoding.Encode(out[1:len(out)-1], raw)
	return out, nil
}

func appendPackedRow(b []byte, r *TrafficRow) ([]byte, error) {
	src, err := netip.ParseAddr(r.Src)
	if err != nil {
		return b, err
	}
	dst, err := netip.ParseAddr(r.Dst)
	if err != nil {
		return b, err
	}
	return appendPackedAddrs(b, &TrafficRowAddrs{Src: src, Dst: dst, Proto: r.Proto, Port: r.Port, Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows})
}

// errZone is returned for a row whose address has a zone, which the
// packed form cannot hold (and a flow export never carries).
var errZone = errors.New("address with a zone")

func appendPackedAddrs(b []byte, r *TrafficRowAddrs) ([]byte, error) {
	src, dst := r.Src, r.Dst
	if !src.IsValid() || !dst.IsValid() {
		return b, errors.New("invalid address")
	}
	if src.Zone() != "" || dst.Zone() != "" {
		return b, errZone
	}
	var flags byte
	if !src.Is4() {
		flags |= 1
	}
	if !dst.Is4() {
		flags |= 2
	}
	b = append(b, flags)
	b = appendAddr(b, src)
	b = appendAddr(b, dst)
	b = append(b, r.Proto)
	b = binary.AppendUvarint(b, uint64(r.Port))
	b = binary.AppendUvarint(b, r.Bytes)
	b = binary.AppendUvarint(b, r.Packets)
	return binary.AppendUvarint(b, r.Flows), nil
}

func appendAddr(b []byte, a netip.Addr) []byte {
	if a.Is4() {
		v := a.As4()
		return append(b, v[:]...)
	}
	v := a.As16()
	return append(b, v[:]...)
}

// TrafficPacker writes a traffic.recorded payload whose rows are added
// one at a time, straight from their addresses, each packed and
// base64-encoded into the payload as it is added: a window of 166,667
// rows is its 4.5 MB payload and nothing beside it, where the same rows
// as []TrafficRow are about 22 MB of structs and address strings (parsed
// again to be packed), and packed first and encoded after, 3.4 MB more,
// all live at once while a window is handed over, serve's busiest
// moment. The payload is byte for byte the one [New] writes for the same
// rows listed in Rows.
type TrafficPacker struct {
	payload []byte // the payload so far: its head, then the rows' base64
	// raw holds packed rows not yet encoded: fewer than packChunk bytes,
	// and after a flush fewer than 3 (base64 encodes whole groups of 3).
	raw  []byte
	n    int
	done bool
}

// packChunk is how many packed bytes a packer gathers before it encodes
// them: encoding a row at a time would call the encoder 166,667 times a
// window.
const packChunk = 4095 // a multiple of 3

// rowsKey opens the rows' string: Rows is TrafficRecorded's last field,
// so New writes it last.
const rowsKey = `,"rows":"`

// NewTrafficPacker returns a packer of p's payload (p.Rows must be
// empty), with room for size bytes of packed rows, the sum of
// [PackedRowLen] over the rows to come: made once at its final size, the
// payload is not grown by copying (more rows still fit, at that cost).
func NewTrafficPacker(p TrafficRecorded, size int) (*TrafficPacker, error) {
	if len(p.Rows) > 0 {
		return nil, fmt.Errorf("events: new %s: rows both listed and packed", KindTrafficRecorded)
	}
	// Everything but the rows: a shallower field named rows hides
	// TrafficRecorded's, and being nil and omitempty it is left out.
	head, err := json.Marshal(struct {
		TrafficRecorded
		Rows *struct{} `json:"rows,omitempty"`
	}{TrafficRecorded: p})
	if err != nil || len(head) < 2 || head[len(head)-1] != '}' {
		return nil, fmt.Errorf("events: encode %s payload: %v", KindTrafficRecorded, err)
	}
	size = max(size, 0)
	payload := make([]byte, 0, len(head)-1+len(rowsKey)+base64.StdEncoding.EncodedLen(size)+2)
	payload = append(payload, head[:len(head)-1]...)
	payload = append(payload, rowsKey...)
	return &TrafficPacker{payload: payload, raw: make([]byte, 0, packChunk+maxPackedRow)}, nil
}

// maxPackedRow is the longest packed row: flags, two IPv6 addresses, the
// protocol, a port's uvarint (3) and three uint64s' (10 each).
const maxPackedRow = 1 + 16 + 16 + 1 + 3 + 3*binary.MaxVarintLen64

// PackedRowLen is the length of r packed (for [NewTrafficPacker]'s
// size); r's addresses are taken as valid.
func PackedRowLen(r *TrafficRowAddrs) int {
	n := 1 + 4 + 4 + 1 + uvarintLen(uint64(r.Port)) + uvarintLen(r.Bytes) + uvarintLen(r.Packets) + uvarintLen(r.Flows)
	if !r.Src.Is4() {
		n += 12
	}
	if !r.Dst.Is4() {
		n += 12
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Add packs r after the rows added before it. A row whose addresses
// are not both valid and without a zone is an error, and not added.
func (k *TrafficPacker) Add(r *TrafficRowAddrs) error {
	if k.done {
		return fmt.Errorf("events: traffic row %d: added after the payload was made", k.n)
	}
	raw, err := appendPackedAddrs(k.raw, r)
	if err != nil {
		return fmt.Errorf("events: traffic row %d: %w", k.n, err)
	}
	k.raw = raw
	k.n++
	if len(k.raw) >= packChunk {
		k.flush(false)
	}
	return nil
}

// flush encodes the packed rows gathered, all of them when last, else
// their whole groups of 3 (the rest waits for the next rows).
func (k *TrafficPacker) flush(last bool) {
	m := len(k.raw)
	if !last {
		m -= m % 3
	}
	enc := base64.StdEncoding.EncodedLen(m)
	off := len(k.payload)
	k.payload = slices.Grow(k.payload, enc)[:off+enc]
	base64.StdEncoding.Encode(k.payload[off:], k.raw[:m])
	k.raw = k.raw[:copy(k.raw, k.raw[m:])]
}

// Len is the number of rows added.
func (k *TrafficPacker) Len() int { return k.n }

// Recorded returns the traffic.recorded of the rows added, at t (now
// when zero). The packer's work ends there: it takes no more rows.
func (k *TrafficPacker) Recorded(t time.Time) (Envelope, error) {
	if k.done {
		return Envelope{}, fmt.Errorf("events: new %s: the packer's payload was already made", KindTrafficRecorded)
	}
	k.flush(true)
	k.done = true
	payload := append(k.payload, `"}`...)
	k.payload, k.raw = nil, nil
	spec, ok := Lookup(KindTrafficRecorded)
	if !ok {
		return Envelope{}, fmt.Errorf("events: new %q: %w", KindTrafficRecorded, ErrUnknownKind)
	}
	if t.IsZero() {
		t = time.Now()
	}
	return Envelope{ID: NewID(), Time: t.UTC(), Kind: KindTrafficRecorded, V: spec.Version, Payload: payload}, nil
}

// UnmarshalJSON reads v2's packed string or v1's array of objects.
func (rs *TrafficRows) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) == 0 || b[0] != '"' {
		var v1 []TrafficRow
		if err := json.Unmarshal(b, &v1); err != nil {
			return err
		}
		*rs = v1
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("events: traffic rows: %w", err)
	}
	out := TrafficRows{}
	var r TrafficRowAddrs
	for len(raw) > 0 {
		if raw, err = unpackRow(raw, &r); err != nil {
			return err
		}
		out = append(out, TrafficRow{Src: r.Src.String(), Dst: r.Dst.String(), Proto: r.Proto, Port: r.Port, Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows})
	}
	*rs = out
	return nil
}

// errPackedRow is returned for packed rows that end early or hold a
// value out of range.
var errPackedRow = errors.New("events: traffic rows: malformed packed row")

// unpackRow reads the first packed row of b into *r and returns the rest.
func unpackRow(b []byte, r *TrafficRowAddrs) ([]byte, error) {
	if len(b) < 1 {
		return nil, errPackedRow
	}
	flags := b[0]
	if flags > 3 {
		return nil, errPackedRow
	}
	b = b[1:]
	addr := func(v6 bool) (netip.Addr, bool) {
		if v6 {
			if len(b) < 16 {
				return netip.Addr{}, false
			}
			a := netip.AddrFrom16([16]byte(b[:16]))
			b = b[16:]
			return a, true
		}
		if len(b) < 4 {
			return netip.Addr{}, false
		}
		a := netip.AddrFrom4([4]byte(b[:4]))
		b = b[4:]
		return a, true
	}
	var ok1, ok2 bool
	r.Src, ok1 = addr(flags&1 != 0)
	r.Dst, ok2 = addr(flags&2 != 0)
	if !ok1 || !ok2 || len(b) < 1 {
		return nil, errPackedRow
	}
	r.Proto = b[0]
	b = b[1:]
	var vals [4]uint64
	for i := range vals {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errPackedRow
		}
		vals[i], b = n, b[k:]
	}
	if vals[0] > 65535 {
		return nil, errPackedRow
	}
	r.Port, r.Bytes, r.Packets, r.Flows = uint16(vals[0]), vals[1], vals[2], vals[3]
	return b, nil
}
