package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// sealed seals e after the zero hash, as the first event of a log.
func sealed(t testing.TB, e events.Envelope) (events.Envelope, []byte) {
	t.Helper()
	s := &Store{reg: events.Default}
	it, err := s.prepare(e, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if it.body == nil && !it.split() {
		t.Error("prepare did not pre-encode the canonical body: the writer would encode in full")
	}
	it.e.Seq = 1
	slow := item{e: it.e} // no body: the full-encoding fallback
	v, _, err := seal(&it, events.ZeroHash, hashBytes(events.ZeroHash))
	if err != nil {
		t.Fatal(err)
	}
	vs, _, err := seal(&slow, events.ZeroHash, hashBytes(events.ZeroHash))
	if err != nil {
		t.Fatal(err)
	}
	b, bs := v.slice(0, v.size()), vs.slice(0, vs.size())
	if !bytes.Equal(b, bs) {
		t.Errorf("spliced value\n%s\nfull encoding\n%s", b, bs)
	}
	return it.e, b
}

func TestSealIsEnvelopeJSON(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	base := events.Envelope{ID: "0123456789abcdef0123456789abcdef", Time: at, Kind: events.KindClockTicked, V: 1}
	cases := []struct {
		name    string
		payload string
		mutate  func(e *events.Envelope)
	}{
		{"plain", `{"at":"2026-02-03T04:05:06Z"}`, nil},
		{"no payload", ``, nil},
		{"null payload", `null`, nil},
		{"whitespace and html", "{ \"a\" : \"<b>&</b>\",\n \"n\": [1, 2.50, -3e2] }", nil},
		{"unicode and escapes", `{"s":"é\u00e9\n\t\"\\ \u2028"}`, nil},
		{"all optional fields", `{}`, func(e *events.Envelope) {
			e.Source, e.Actor, e.Device, e.Stream = "sweep:lan", "alice", "dev1", "scan/x"
		}},
		{"whole seconds", `{}`, func(e *events.Envelope) { e.Time = at.Truncate(time.Second) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := base
			e.Payload = json.RawMessage(c.payload)
			if c.mutate != nil {
				c.mutate(&e)
			}
			e, v := sealed(t, e)
			want, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(v, want) {
				t.Errorf("stored\n%s\nwant json.Marshal\n%s", v, want)
			}
			if h, err := e.ComputeHash(); err != nil || h != e.Hash {
				t.Errorf("hash %s, ComputeHash %s (%v)", e.Hash, h, err)
			}
			if _, reason := checkEvent(1, v, events.ZeroHash, hashBytes(events.ZeroHash)); reason != "" {
				t.Errorf("checkEvent: %s", reason)
			}
		})
	}
}

// FuzzSealVerify: whatever an appender sends that prepare accepts, the
// stored value is json.Marshal of the envelope and verifies.
func FuzzSealVerify(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "src", "actor", "dev", int64(0))
	f.Add([]byte(`  [1, "<>&", {"x": null}] `), "", "", "", int64(1e18))
	f.Add([]byte(`"\u2028\ud800"`), "ü", "\x00", "", int64(-1e17))
	f.Add([]byte{}, "", "", "", int64(42))
	reg := events.Default
	f.Fuzz(func(t *testing.T, payload []byte, source, actor, device string, nanos int64) {
		s := &Store{reg: reg}
		e := events.Envelope{Kind: events.KindClockTicked, V: 1, Payload: payload,
			Source: source, Actor: actor, Device: device, Time: time.Unix(0, nanos)}
		if _, err := s.prepare(e, time.Now()); err != nil {
			return
		}
		e, v := sealed(t, e)
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("json.Marshal of an accepted envelope: %v", err)
		}
		if !bytes.Equal(v, want) {
			t.Fatalf("stored\n%q\nwant\n%q", v, want)
		}
		if _, reason := checkEvent(1, v, events.ZeroHash, hashBytes(events.ZeroHash)); reason != "" {
			t.Fatalf("checkEvent: %s for %q", reason, v)
		}
	})
}

// FuzzCheckEvent: Verify's per-event check never panics on stored bytes.
func FuzzCheckEvent(f *testing.F) {
	e, v := sealed(f, events.Envelope{ID: "x", Time: time.Unix(1, 0).UTC(), Kind: events.KindClockTicked, V: 1, Payload: json.RawMessage(`{}`)})
	f.Add(v, uint64(1), events.ZeroHash)
	f.Add([]byte(`{"seq":1,"prev_hash":"zz"}`), uint64(1), e.Hash)
	f.Add([]byte(`{`), uint64(0), "")
	f.Fuzz(func(t *testing.T, v []byte, seq uint64, prev string) {
		raw := make([]byte, 32)
		if validHash(prev) {
			raw = hashBytes(prev)
		}
		checkEvent(seq, v, prev, raw)
	})
}

// FuzzDecodeSnapshot: stored snapshot bytes never panic the decoder, and
// whatever it accepts encodes and decodes to the same thing.
func FuzzDecodeSnapshot(f *testing.F) {
	good, err := encodeSnapshot(&Snapshot{Seq: 3, Hash: events.ZeroHash, Time: time.Unix(5, 0).UTC(),
		Buckets:   map[string][]KV{"inv": {{K: []byte("a"), V: []byte("1")}, {K: []byte("n"), Nested: true, Sequence: 4, Bucket: []KV{{K: []byte("x")}}}}},
		Sequences: map[string]uint64{"inv": 9}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(v1(f, sampleSnapshot()))
	if two, err := encodeSnapshot(sampleSnapshot()); err == nil {
		f.Add(two)
	}
	f.Add([]byte("not gzip"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"seq":1,"hash":"00","buckets":{"log":[]}}`))
	zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		again, err := encodeSnapshot(snap)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := decodeSnapshot(again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// FuzzDecodeAnchor: the anchor in meta never panics the decoder.
func FuzzDecodeAnchor(f *testing.F) {
	f.Add([]byte(`{"seq":5,"hash":"` + events.ZeroHash + `"}`))
	f.Add([]byte(`{"seq":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if b == nil {
			return
		}
		a, err := decodeAnchor(b)
		if err == nil && !validHash(a.Hash) {
			t.Fatalf("accepted hash %q", a.Hash)
		}
	})
}

// A large item's body is dropped once sealed, a small one's kept; sealed
// again (a retried batch), both give the same values as the first time.
func TestAppendTxDropsLargeBodies(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Store{reg: events.Default}
	var items []item
	for _, n := range []int{10, dropBody, -dropBody} {
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{ScanID: strings.Repeat("x", max(n, -n))}, time.Now())
		if n < 0 {
			// Whitespace: encoding/json would compact it, so it is not
			// spliced, and its body is encoded.
			e.Payload = append(json.RawMessage("{ "), e.Payload[1:]...)
		}
		it, err := s.prepare(e, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	seal := func() [][]byte {
		var vals [][]byte
		errRollback := errors.New("rolled back")
		err := db.Update(func(tx *bolt.Tx) error {
			lb, err := tx.CreateBucketIfNotExists(bLog)
			if err != nil {
				return err
			}
			tip := chain{hash: events.ZeroHash}
			copy(tip.raw[:], hashBytes(tip.hash))
			if _, err := appendTx(lb, &tip, items); err != nil {
				return err
			}
			for i := range items {
				vals = append(vals, bytes.Clone(lb.Get(seqKey(uint64(i+1)))))
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		return vals
	}
	first := seal()
	if items[0].body == nil || items[1].body != nil || !items[1].split() || items[2].body != nil || items[2].split() {
		t.Fatalf("bodies kept: small %v, large spliced %v (split %v), large encoded %v (split %v)",
			items[0].body != nil, items[1].body != nil, items[1].split(), items[2].body != nil, items[2].split())
	}
	again := seal()
	for i := range first {
		if !bytes.Equal(first[i], again[i]) {
			t.Fatalf("item %d sealed again differs", i)
		}
		var e events.Envelope
		if err := json.Unmarshal(again[i], &e); err != nil {
			t.Fatal(err)
		}
		if h, err := e.ComputeHash(); err != nil || h != e.Hash {
			t.Fatalf("item %d: hash %s, computed %s (%v)", i, e.Hash, h, err)
		}
	}
}

// A value's slice is its pieces' concatenation from lo to hi, and the
// piece's own bytes when the range lies in one piece.
func TestValueSlice(t *testing.T) {
	v := value{[]byte("abcde"), []byte("fghijkl"), []byte("mno")}
	all := "abcdefghijklmno"
	for lo := 0; lo <= len(all); lo++ {
		for hi := lo; hi <= len(all); hi++ {
			got := v.slice(lo, hi)
			if string(got) != all[lo:hi] {
				t.Fatalf("slice(%d, %d) = %q, want %q", lo, hi, got, all[lo:hi])
			}
			if off := 5; lo >= off && hi <= off+7 && lo < hi && &got[0] != &v[1][lo-off] {
				t.Fatalf("slice(%d, %d) copied bytes that lie in one piece", lo, hi)
			}
			if cap(got) > hi-lo {
				t.Fatalf("slice(%d, %d) has room past its end: an append would write into the next piece", lo, hi)
			}
		}
	}
	if v.size() != len(all) {
		t.Fatalf("size %d", v.size())
	}
	one := value{[]byte("abc")}
	if got := one.slice(0, 3); string(got) != "abc" || &got[0] != &one[0][0] {
		t.Fatalf("a value of one piece: %q, copied", got)
	}
	if got := (value{[]byte("ab"), nil, []byte("cd")}).slice(1, 4); string(got) != "bcd" {
		t.Fatalf("across an empty piece: %q", got)
	}
}

// A large payload is sealed and stored from where it is: preparing and
// sealing a 1 MiB event allocates a few hundred bytes, not the two
// copies of the payload (its canonical body, then its value) it took.
func TestSealLeavesLargePayloadInPlace(t *testing.T) {
	e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{ScanID: strings.Repeat("x", 1<<20)}, time.Now())
	e.Source = "flowlistener:gw"
	sealed(t, e) // the pieces make the bytes a full encoding makes
	s := &Store{reg: events.Default}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	it, err := s.prepare(e, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	it.e.Seq = 1
	v, _, err := seal(&it, events.ZeroHash, hashBytes(events.ZeroHash))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !it.split() || len(v[1]) != len(e.Payload) || &v[1][0] != &e.Payload[0] {
		t.Fatalf("the payload is not the value's middle piece (split %v)", it.split())
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<10 {
		t.Fatalf("%d bytes allocated to prepare and seal a %d-byte payload", n, len(e.Payload))
	}
}
