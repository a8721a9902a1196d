package events

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// spliced returns CanonicalBytes' spliced encoding of e's envelope with
// payload p, whatever its size, and whether it applied.
func spliced(e Envelope, p []byte) ([]byte, bool) {
	if !compactSafe(p) || !json.Valid(p) {
		return nil, false
	}
	pre, post, ok := splitCanonical(e.canonical(p))
	if !ok {
		return nil, false
	}
	return append(append(append([]byte{}, pre...), p...), post...), true
}

// marshaled is the canonical bytes as encoding/json writes them.
func marshaled(t testing.TB, e Envelope, p []byte) ([]byte, error) {
	t.Helper()
	return json.Marshal(e.canonical(p))
}

var canonicalEnvelope = Envelope{Seq: 42, ID: "0123abc", Time: time.Date(2026, 11, 28, 12, 0, 0, 5, time.UTC), Kind: KindTrafficRecorded, V: 2,
	Source: "flowlistener:gw", Actor: "a<b>&c", Stream: "scan/x", PrevHash: ZeroHash}

// The spliced canonical bytes are encoding/json's, byte for byte, for
// every payload it would copy unchanged; the others are left to it.
func TestCanonicalSplice(t *testing.T) {
	for _, tc := range []struct {
		payload string
		splice  bool
	}{
		{`{"rows":"AAAA","drops":{"x":1}}`, true},
		{`null`, true},
		{`[1,2.5e3,"a\"b\\c\u003c",true,{}]`, true},
		{`{"s":"é ✓ \u2028"}`, true}, // the escape is text, not the character
		{`{"a": 1}`, false},          // whitespace
		{"{\"a\":\n1}", false},
		{`{"s":"<b>"}`, false},
		{`{"s":"a&b"}`, false},
		{"{\"s\":\"\u2028\"}", false},
		{"{\"s\":\"\u2029\"}", false},
		{`{"a":1`, false}, // invalid
		{`{"a":1}x`, false},
	} {
		got, ok := spliced(canonicalEnvelope, []byte(tc.payload))
		if ok != tc.splice {
			t.Errorf("%s: spliced %v, want %v", tc.payload, ok, tc.splice)
			continue
		}
		if !ok {
			continue
		}
		want, err := marshaled(t, canonicalEnvelope, []byte(tc.payload))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s:\nspliced %s\nencoding/json %s (%v)", tc.payload, got, want, err)
		}
	}
	// CanonicalBytes takes the splice for a large payload, and gives the
	// same bytes either way.
	big := `{"rows":"` + strings.Repeat("QUJD", spliceMin/4) + `"}`
	e := canonicalEnvelope
	e.Payload = json.RawMessage(big)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := e.CanonicalBytes()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	// Before encoding/json has a buffer that large in its pool, it would
	// allocate about three times the payload.
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(big))*3/2 {
		t.Errorf("%d bytes allocated for the canonical bytes of a %d-byte payload", n, len(big))
	}
	want, _ := marshaled(t, e, []byte(big))
	if string(got) != string(want) {
		t.Fatal("a large payload's canonical bytes differ from encoding/json's")
	}
	// CanonicalSplit gives the bytes around the same payload, which it
	// leaves where it is.
	pre, post, ok := e.CanonicalSplit()
	if !ok || string(pre)+big+string(post) != string(want) {
		t.Fatalf("split (%v): %.80s … %s", ok, pre, post)
	}
	e.Payload = json.RawMessage(`{"rows": 1` + strings.Repeat(" ", spliceMin) + `}`)
	if got, err := e.CanonicalBytes(); err != nil || !strings.Contains(string(got), `"payload":{"rows":1}`) {
		t.Fatalf("a large payload with whitespace: %v", err)
	}
	for _, p := range []string{string(e.Payload), `{"rows":"AAAA"}`, big[:len(big)-1]} {
		e.Payload = json.RawMessage(p)
		if _, _, ok := e.CanonicalSplit(); ok {
			t.Fatalf("split a payload of %d bytes that CanonicalBytes would not splice", len(p))
		}
	}
}

// FuzzCanonicalSplice: whenever the splice applies, its bytes are
// encoding/json's.
func FuzzCanonicalSplice(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x"]}`, `"\u2028"`, `{"s":"<"}`, "\"\xe2\x80\xa8\"", `{"a":"\\"}`, `[]`, `0`} {
		f.Add(s, "actor", ZeroHash)
	}
	f.Fuzz(func(t *testing.T, payload, actor, prev string) {
		e := canonicalEnvelope
		e.Actor, e.PrevHash = actor, prev
		got, ok := spliced(e, []byte(payload))
		if !ok {
			return
		}
		want, err := marshaled(t, e, []byte(payload))
		if err != nil {
			t.Fatalf("spliced a payload encoding/json refuses: %q: %v", payload, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\nspliced %s\nencoding/json %s", payload, got, want)
		}
	})
}

// BenchmarkCanonicalBytesLarge: the canonical bytes of a flow window's
// event (166,667 packed rows: a 4.5 MB payload), spliced and as
// encoding/json writes them.
func BenchmarkCanonicalBytesLarge(b *testing.B) {
	e := canonicalEnvelope
	e.Payload = json.RawMessage(`{"scan_id":"flowlistener:gw@1","rows":"` + strings.Repeat("QUJD", 4_500_000/4) + `"}`)
	b.Run("splice", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(e.Payload)))
		for b.Loop() {
			if _, err := e.CanonicalBytes(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(e.Payload)))
		for b.Loop() {
			if _, err := marshaled(b, e, e.Payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}
