package store

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/jocasta/jocasta/events"
)

// sampleSnapshot has values of every kind a bucket dump holds: binary
// and JSON values, an empty value, nested buckets (one empty, one with a
// sequence and its own nested bucket), several buckets.
func sampleSnapshot() *Snapshot {
	return &Snapshot{
		Seq: 42, Hash: events.ZeroHash, Time: time.Date(2026, 11, 27, 10, 0, 0, 123, time.UTC),
		Buckets: map[string][]KV{
			"inventory.devices": {
				{K: []byte("d1"), V: []byte(`{"id":"d1","name":"nas"}`)},
				{K: []byte("d2"), V: []byte{0, 1, 2, 0xff, '\n'}},
				{K: []byte("d3")},
			},
			"scans": {
				{K: []byte("by"), Nested: true, Sequence: 7, Bucket: []KV{
					{K: []byte{0x00, 0x01}, V: []byte("x")},
					{K: []byte("deeper"), Nested: true, Bucket: []KV{{K: []byte("k"), V: []byte("v")}}},
				}},
				{K: []byte("empty"), Nested: true, Bucket: []KV{}},
			},
			"never.created": {},
		},
		Sequences: map[string]uint64{"scans": 99},
	}
}

// v1 is the first format: gzip(JSON(snap)), as databases written before
// the binary layout hold it.
func v1(t testing.TB, snap *Snapshot) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(snap); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotCodec(t *testing.T) {
	want := sampleSnapshot()
	data, err := encodeSnapshot(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	// The first format decodes to the same snapshot (JSON drops empty
	// nested buckets' lists: compare what a restore sees).
	old, err := decodeSnapshot(v1(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, old, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("the first format (-want +got):\n%s", d)
	}
	// Same input, same bytes (buckets in name order).
	again, _ := encodeSnapshot(want)
	if !bytes.Equal(again, data) {
		t.Fatal("two encodings of one snapshot differ")
	}
}

// TestSnapshotCodecRefuses: hostile or broken snapshot bytes are errors
// that say what is wrong, never a panic or an allocation of what a
// length claims.
func TestSnapshotCodecRefuses(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	field := func(b []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(b))), b...) }
	head := field([]byte(`{"seq":1,"hash":"` + events.ZeroHash + `","time":"2026-01-01T00:00:00Z"}`))
	body := func(parts ...[]byte) []byte {
		out := append([]byte(snapMagic), head...)
		for _, p := range parts {
			out = append(out, p...)
		}
		return gz(out)
	}
	nested := []byte{}
	for range maxSnapDepth + 1 {
		nested = append(nested, snapNested)
		nested = append(nested, field([]byte("n"))...)
		nested = append(nested, 0) // sequence
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"not gzip", "nope", "decompress"},
		{"cut after the magic", string(gz([]byte(snapMagic))), "unexpected EOF"},
		{"cut in a bucket", string(body(field([]byte("inv")), []byte{snapValue})), "unexpected EOF"},
		{"a length past the bound", string(body(field([]byte("inv")), []byte{snapValue}, binary.AppendUvarint(nil, 1<<40))), "at most"},
		{"an unknown tag", string(body(field([]byte("inv")), []byte{9})), "entry tag 9"},
		{"a bucket twice", string(body(field([]byte("inv")), []byte{snapEnd}, field([]byte("inv")), []byte{snapEnd}, field(nil))), "twice"},
		{"the log's bucket", string(body(field([]byte("log")), []byte{snapEnd}, field(nil))), "not allowed"},
		{"an empty key", string(body(field([]byte("inv")), []byte{snapValue}, field(nil), field([]byte("v")), []byte{snapEnd}, field(nil))), "empty key"},
		{"nested too deep", string(body(field([]byte("inv")), nested)), "nested deeper"},
		{"a bad header", string(gz(append([]byte(snapMagic), field([]byte("{"))...))), "header"},
		{"a bad hash", string(gz(append([]byte(snapMagic), append(field([]byte(`{"seq":1,"hash":"zz"}`)), field(nil)...)...))), "hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeSnapshot([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkEncodeSnapshot: a dump of 20,000 history-like rows (JSON
// values of about 400 bytes) and 20,000 binary rows.
func BenchmarkEncodeSnapshot(b *testing.B) {
	snap := &Snapshot{Seq: 1, Hash: events.ZeroHash, Buckets: map[string][]KV{}}
	for k := range 20000 {
		v, _ := json.Marshal(map[string]any{"id": k, "name": "host-" + strings.Repeat("x", k%20), "addresses": []string{"10.0.0.1", "10.0.0.2"},
			"presence": "online", "first_seen": time.Unix(int64(k), 0).UTC(), "sources": []string{"sweep:lab", "dns:home"}, "notes": strings.Repeat("n", 200)})
		snap.Buckets["inventory.history"] = append(snap.Buckets["inventory.history"], KV{K: binary.BigEndian.AppendUint64([]byte("d"), uint64(k)), V: v})
		snap.Buckets["scanlog.rows"] = append(snap.Buckets["scanlog.rows"], KV{K: binary.BigEndian.AppendUint64(nil, uint64(k)), V: binary.AppendUvarint(bytes.Repeat([]byte{byte(k)}, 40), uint64(k))})
	}
	for _, f := range []struct {
		name string
		enc  func() ([]byte, error)
	}{
		{"v1-json", func() ([]byte, error) { return v1(b, snap), nil }},
		{"v2-binary", func() ([]byte, error) { return encodeSnapshot(snap) }},
	} {
		b.Run(f.name, func(b *testing.B) {
			var n int
			for range b.N {
				data, err := f.enc()
				if err != nil {
					b.Fatal(err)
				}
				n = len(data)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
