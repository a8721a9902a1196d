package icmpsweep

import (
	"bytes"
	"testing"
)

func TestChecksum(t *testing.T) {
	// RFC 1071 example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != ^uint16(0xddf2) {
		t.Errorf("checksum = %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	if got := checksum([]byte{0x01}); got != ^uint16(0x0100) {
		t.Errorf("odd length: %#04x", got)
	}
	// A packet with its checksum in place sums to zero.
	b := putEcho(make([]byte, probeLen), false, 0x1234, 7, 0xfeedface, 123456)
	if checksum(b) != 0 {
		t.Errorf("echo request does not verify: %x", b)
	}
}

func TestEchoRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		b := putEcho(make([]byte, 64), v6, 0xbeef, 0x0102, 0x1122334455667788, 987654321)
		if len(b) != probeLen {
			t.Fatalf("len %d", len(b))
		}
		if v6 && b[0] != typeEcho6 || !v6 && b[0] != typeEcho4 {
			t.Fatalf("type %d", b[0])
		}
		rep := bytes.Clone(b)
		rep[0] = typeEchoReply4
		if v6 {
			rep[0] = typeEchoReply6
		}
		r, ok := parseReply(rep, v6, false)
		if !ok || r != (reply{id: 0xbeef, seq: 0x0102, token: 0x1122334455667788, sentNs: 987654321}) {
			t.Errorf("v6=%v: parsed %+v ok=%v", v6, r, ok)
		}
		if _, ok := parseReply(b, v6, false); ok {
			t.Errorf("v6=%v: an echo request parsed as a reply", v6)
		}
		if !v6 {
			withHeader := append([]byte{0x46, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, rep...)
			if r2, ok := parseReply(withHeader, false, true); !ok || r2 != r {
				t.Errorf("with a 24-byte IPv4 header: %+v ok=%v", r2, ok)
			}
		}
	}
}

func TestParseReplyRejects(t *testing.T) {
	good := putEcho(make([]byte, probeLen), false, 1, 2, 3, 4)
	good[0] = typeEchoReply4
	tests := []struct {
		name     string
		b        []byte
		ipHeader bool
	}{
		{"empty", nil, false},
		{"short", good[:probeLen-1], false},
		{"code not 0", append([]byte{0, 1}, good[2:]...), false},
		{"ip header too short", append([]byte{0x45}, make([]byte, 10)...), true},
		{"not IPv4", append([]byte{0x65}, make([]byte, 50)...), true},
		{"ihl below 20", append([]byte{0x44}, make([]byte, 50)...), true},
		{"ihl beyond packet", append([]byte{0x4f}, make([]byte, 30)...), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, ok := parseReply(tt.b, false, tt.ipHeader); ok {
				t.Errorf("accepted %+v", r)
			}
		})
	}
}

func FuzzParseReply(f *testing.F) {
	rep := putEcho(make([]byte, probeLen), false, 1, 2, 3, 4)
	rep[0] = typeEchoReply4
	f.Add(rep, false, false)
	f.Add(append(append([]byte{0x45}, make([]byte, 19)...), rep...), false, true)
	f.Add([]byte{129, 0, 0, 0}, true, false)
	f.Fuzz(func(t *testing.T, b []byte, v6, ipHeader bool) {
		r, ok := parseReply(b, v6, ipHeader)
		if !ok {
			return
		}
		// What parses re-encodes to the same payload.
		again := putEcho(make([]byte, probeLen), v6, r.id, r.seq, r.token, r.sentNs)
		body := b
		if ipHeader {
			body = b[int(b[0]&0x0f)*4:]
		}
		if !bytes.Equal(again[4:probeLen], body[4:probeLen]) {
			t.Errorf("reparse mismatch: %x vs %x", again, body)
		}
	})
}
