package events

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSealAndVerifyHash(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123, time.UTC)
	e := MustNew(KindDeviceWatchSet, DeviceWatchSet{Watched: true}, at)
	e.Seq = 1
	if err := e.Seal(ZeroHash); err != nil {
		t.Fatal(err)
	}
	if len(e.Hash) != 64 {
		t.Fatalf("hash %q", e.Hash)
	}
	// Round trip through JSON keeps the hash valid.
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	h, err := back.ComputeHash()
	if err != nil {
		t.Fatal(err)
	}
	if h != e.Hash {
		t.Fatalf("hash after round trip %s, want %s", h, e.Hash)
	}
	tests := []struct {
		name   string
		mutate func(*Envelope)
	}{
		{"payload", func(e *Envelope) { e.Payload = json.RawMessage(`{"watched":false}`) }},
		{"seq", func(e *Envelope) { e.Seq = 2 }},
		{"time", func(e *Envelope) { e.Time = e.Time.Add(time.Nanosecond) }},
		{"actor", func(e *Envelope) { e.Actor = "mallory" }},
		{"prev", func(e *Envelope) { e.PrevHash = strings.Repeat("1", 64) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := back
			tc.mutate(&c)
			h, err := c.ComputeHash()
			if err != nil {
				t.Fatal(err)
			}
			if h == e.Hash {
				t.Fatalf("changing %s did not change the hash", tc.name)
			}
		})
	}
}

func TestComputeHashBadPrev(t *testing.T) {
	e := MustNew(KindClockTicked, ClockTicked{}, time.Now())
	e.PrevHash = "xyz"
	if _, err := e.ComputeHash(); !errors.Is(err, ErrBadPrevHash) {
		t.Fatalf("err = %v", err)
	}
}

func TestPayloadWhitespaceDoesNotChangeHash(t *testing.T) {
	e := MustNew(KindDeviceWatchSet, DeviceWatchSet{Watched: true}, time.Unix(0, 0))
	e.Seal(ZeroHash)
	e2 := e
	e2.Payload = json.RawMessage("{ \"watched\" : true }")
	h, _ := e2.ComputeHash()
	if h != e.Hash {
		t.Fatal("canonical bytes must compact the payload")
	}
}

func TestRegistryUpcast(t *testing.T) {
	type v2 struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	r, err := NewRegistry(KindSpec{Kind: "test.thing", Version: 2, Payload: v2{}, Upcasters: []Upcaster{{
		From: 1,
		Up: func(p json.RawMessage) (json.RawMessage, error) {
			var old struct {
				N string `json:"n"`
			}
			if err := json.Unmarshal(p, &old); err != nil {
				return nil, err
			}
			return json.Marshal(v2{Name: old.N, Count: 1})
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     Envelope
		want    v2
		wantErr error
	}{
		{"v1 upcast", Envelope{Kind: "test.thing", V: 1, Payload: json.RawMessage(`{"n":"a"}`)}, v2{"a", 1}, nil},
		{"v2 as is", Envelope{Kind: "test.thing", V: 2, Payload: json.RawMessage(`{"name":"b","count":7}`)}, v2{"b", 7}, nil},
		{"future", Envelope{Kind: "test.thing", V: 3, Payload: json.RawMessage(`{}`)}, v2{}, ErrUnknownVersion},
		{"zero", Envelope{Kind: "test.thing", V: 0, Payload: json.RawMessage(`{}`)}, v2{}, ErrUnknownVersion},
		{"unknown kind", Envelope{Kind: "nope", V: 1}, v2{}, ErrUnknownKind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Decode(tc.env)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got.(*v2) != tc.want {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
		})
	}
}

func TestRegistryRejectsGaps(t *testing.T) {
	if _, err := NewRegistry(KindSpec{Kind: "a", Version: 3, Payload: struct{}{}, Upcasters: []Upcaster{{From: 1}}}); err == nil {
		t.Fatal("missing upcaster from v2 accepted")
	}
	if _, err := NewRegistry(KindSpec{Kind: "a", Version: 1, Payload: struct{}{}}, KindSpec{Kind: "a", Version: 1, Payload: struct{}{}}); err == nil {
		t.Fatal("duplicate kind accepted")
	}
}

func TestDefaultDecodesEveryKind(t *testing.T) {
	for _, s := range Kinds() {
		t.Run(s.Kind, func(t *testing.T) {
			e, err := New(s.Kind, s.Payload, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if e.Time.Location() != time.UTC || e.ID == "" {
				t.Fatalf("time %v id %q", e.Time, e.ID)
			}
			if _, err := Decode(e); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEveryKindDocumented keeps docs/events.md true: each registered kind
// has a "### `kind`" section naming its version and every payload field.
func TestEveryKindDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range Kinds() {
		head := "### `" + s.Kind + "`"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/events.md has no section %s", head)
			continue
		}
		section := doc[i+len(head):]
		if j := strings.Index(section, "\n### "); j >= 0 {
			section = section[:j]
		}
		if !strings.Contains(section, "v"+strconv.Itoa(s.Version)) {
			t.Errorf("%s: section does not name version v%d", s.Kind, s.Version)
		}
		for _, f := range jsonFields(s.Payload) {
			if !strings.Contains(section, "`"+f+"`") {
				t.Errorf("%s: field %q not documented", s.Kind, f)
			}
		}
	}
}

func jsonFields(v any) []string {
	b, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	// omitempty fields are absent from a zero value: add them from tags.
	out := fieldsFromTags(v)
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRedactSecrets(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		payload any
		kind    string
		secret  string
	}{
		{TokenCreated{TokenID: "tok_1", Name: "n", Mode: ModeRead, SecretSHA256: "abc123secret"}, KindTokenCreated, "abc123secret"},
		{UserAdded{Name: "ann", PasswordHash: "$argon2id$v=19$secret"}, KindUserAdded, "$argon2id$v=19$secret"},
		{UserPasswordChanged{Name: "ann", PasswordHash: "$argon2id$v=19$other"}, KindUserPasswordChanged, "$argon2id$v=19$other"},
	} {
		e := MustNew(tc.kind, tc.payload, at)
		r := RedactSecrets(e)
		if strings.Contains(string(r.Payload), tc.secret) || !strings.Contains(string(r.Payload), RedactedSecret) {
			t.Errorf("%s: redacted payload %s", tc.kind, r.Payload)
		}
		if !strings.Contains(string(e.Payload), tc.secret) {
			t.Errorf("%s: RedactSecrets changed the original", tc.kind)
		}
		if !strings.Contains(string(r.Payload), `"name"`) {
			t.Errorf("%s: redaction dropped other fields: %s", tc.kind, r.Payload)
		}
	}
	tick := MustNew(KindClockTicked, ClockTicked{At: at}, at)
	if got := RedactSecrets(tick); string(got.Payload) != string(tick.Payload) {
		t.Errorf("an event without secrets changed: %s", got.Payload)
	}
}
