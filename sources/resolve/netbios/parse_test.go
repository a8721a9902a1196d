package netbios

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is one name table row for buildResponse.
type entry struct {
	name   string
	suffix byte
	flags  uint16
}

// buildResponse builds a node status response the way nmbd does: the
// question name echoed in the answer, no question section.
func buildResponse(id uint16, names []entry, mac []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x84, 0x00, 0, 0, 0, 1, 0, 0, 0, 0) // QR AA, AN=1
	req := AppendRequest(nil, id)
	b = append(b, req[12:46]...) // the encoded name
	b = append(b, 0x00, 0x21, 0x00, 0x01, 0, 0, 0, 0)
	rd := []byte{byte(len(names))}
	for _, n := range names {
		var raw [15]byte
		copy(raw[:], bytes.Repeat([]byte{' '}, 15))
		copy(raw[:], n.name)
		rd = append(rd, raw[:]...)
		rd = append(rd, n.suffix)
		rd = binary.BigEndian.AppendUint16(rd, n.flags)
	}
	rd = append(rd, mac...)
	rd = append(rd, make([]byte, 40)...) // statistics counters
	b = binary.BigEndian.AppendUint16(b, uint16(len(rd)))
	return append(b, rd...)
}

var sampleNames = []entry{
	{"FILESRV", 0x00, 0x0400},
	{"FILESRV", 0x03, 0x0400},
	{"FILESRV", 0x20, 0x0400},
	{"HOMENET", 0x00, 0x8400},
	{"HOMENET", 0x1e, 0x8400},
}

func TestAppendRequest(t *testing.T) {
	got := AppendRequest(nil, 0xbeef)
	want := append([]byte{0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x20, 'C', 'K'},
		bytes.Repeat([]byte("A"), 30)...)
	want = append(want, 0, 0, 0x21, 0, 1)
	if len(got) != requestLen {
		t.Fatalf("request is %d bytes, want %d", len(got), requestLen)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("request\n got %x\nwant %x", got, want)
	}
}

func TestParseNodeStatus(t *testing.T) {
	mac := []byte{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}
	good := buildResponse(7, sampleNames, mac)
	truncate := func(b []byte, n int) []byte { return append([]byte(nil), b[:n]...) }
	withByte := func(b []byte, off int, v byte) []byte {
		c := append([]byte(nil), b...)
		c[off] = v
		return c
	}
	// offset of RDLENGTH and NUM_NAMES in a buildResponse packet
	const rdLenOff, numOff = 12 + 34 + 8, 12 + 34 + 10

	tests := []struct {
		name      string
		in        []byte
		wantName  string
		wantGroup string
		wantMAC   net.HardwareAddr
		wantN     int
		wantErr   bool
	}{
		{name: "nmbd style", in: good, wantName: "FILESRV", wantGroup: "HOMENET",
			wantMAC: mac, wantN: 5},
		{name: "zero MAC is no MAC", in: buildResponse(7, sampleNames, make([]byte, 6)),
			wantName: "FILESRV", wantGroup: "HOMENET", wantN: 5},
		{name: "group only", in: buildResponse(7, []entry{{"WG", 0, 0x8400}}, mac),
			wantGroup: "WG", wantMAC: mac, wantN: 1},
		{name: "no names", in: buildResponse(7, nil, mac), wantMAC: mac},
		{name: "names without statistics", in: func() []byte {
			b := buildResponse(7, sampleNames[:1], nil)
			b = b[:len(b)-40]
			binary.BigEndian.PutUint16(b[rdLenOff:], uint16(1+18))
			return b
		}(), wantName: "FILESRV", wantN: 1},
		{name: "compressed answer name", in: func() []byte {
			b := buildResponse(7, sampleNames, mac)
			return append(append(truncate(b, 12), 0xc0, 0x0c), b[46:]...)
		}(), wantName: "FILESRV", wantGroup: "HOMENET", wantMAC: mac, wantN: 5},
		{name: "control bytes and latin-1", in: buildResponse(7, []entry{{"CAF\xc9\x01X", 0, 0x0400}}, mac),
			wantName: "CAFÉ?X", wantMAC: mac, wantN: 1},
		{name: "empty", in: nil, wantErr: true},
		{name: "header only", in: truncate(good, 12), wantErr: true},
		{name: "a query, not a response", in: AppendRequest(nil, 7), wantErr: true},
		{name: "error rcode", in: withByte(good, 3, 0x03), wantErr: true},
		{name: "no answers", in: withByte(good, 7, 0), wantErr: true},
		{name: "wrong record type", in: withByte(good, 47, 0x20), wantErr: true},
		{name: "rdlength past end", in: withByte(good, rdLenOff, 0xff), wantErr: true},
		{name: "255 names in a short packet", in: withByte(good, numOff, 0xff), wantErr: true},
		{name: "name cut in the middle", in: truncate(good, 30), wantErr: true},
		{name: "answer header cut", in: truncate(good, 50), wantErr: true},
		{name: "bad label length", in: withByte(good, 12, 0x50), wantErr: true},
		{name: "dangling pointer", in: append(truncate(good, 12), 0xc0), wantErr: true},
		{name: "huge question count", in: withByte(good, 4, 0xff), wantErr: true},
		{name: "endless labels", in: append(append(truncate(good, 12),
			bytes.Repeat([]byte{3, 'a', 'b', 'c'}, 100)...), 0), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseNodeStatus(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.ID != 7 {
				t.Errorf("ID = %d, want 7", st.ID)
			}
			if got := st.ComputerName(); got != tc.wantName {
				t.Errorf("ComputerName = %q, want %q", got, tc.wantName)
			}
			if got := st.Workgroup(); got != tc.wantGroup {
				t.Errorf("Workgroup = %q, want %q", got, tc.wantGroup)
			}
			if diff := cmp.Diff(tc.wantMAC, st.MAC); diff != "" {
				t.Errorf("MAC (-want +got):\n%s", diff)
			}
			if len(st.Names) != tc.wantN {
				t.Errorf("%d names, want %d", len(st.Names), tc.wantN)
			}
		})
	}
}

// TestParseCaptured parses replies captured from real responders.
func TestParseCaptured(t *testing.T) {
	tests := []struct {
		file, name, group string
	}{
		{"nmbd-4.17.bin", "LABFILES", "LABGROUP"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			st, err := ParseNodeStatus(b)
			if err != nil {
				t.Fatal(err)
			}
			if st.ComputerName() != tc.name || st.Workgroup() != tc.group {
				t.Errorf("got %q in %q, want %q in %q", st.ComputerName(), st.Workgroup(), tc.name, tc.group)
			}
		})
	}
}

func BenchmarkParseNodeStatus(b *testing.B) {
	pkt, err := os.ReadFile(filepath.Join("testdata", "nmbd-4.17.bin"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseNodeStatus(pkt); err != nil {
			b.Fatal(err)
		}
	}
}
