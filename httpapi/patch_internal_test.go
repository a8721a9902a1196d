package httpapi

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events/command"
)

func TestDecodeDeviceEditRoundTrip(t *testing.T) {
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	tests := []command.DeviceEdit{
		{Label: s("nas")},
		{Group: s("lab"), Type: s("printer"), Notes: s("a\nb"), Ignored: b(true)},
		{Clear: []string{"label", "group", "type", "notes"}},
		{Label: s(strings.Repeat("ü", command.MaxLabel)), Ignored: b(false), Clear: []string{"notes"}},
	}
	for _, want := range tests {
		body := encodeDeviceEdit(want)
		got, err := decodeDeviceEdit(body)
		if err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %s: got %+v, want %+v", body, got, want)
		}
	}
}

// FuzzPatchBody: decoding never panics; an error is a 400 problem; an
// accepted body is a valid edit that survives encoding and decoding.
func FuzzPatchBody(f *testing.F) {
	for _, s := range []string{
		`{"label":"nas","group":null,"ignored":true}`, `{"notes":"a\nb","type":"x"}`, `{}`, `[]`, `null`,
		`{"label":"a","label":"b"}`, `{"a/b~":1}`, `{"label":"` + strings.Repeat("é", 129) + `"}`,
		`{"ignored":null} x`, "{\"label\":\"\xff\"}", `{"label":"\u0000"}`, `{"label":"\ud800"}`, `  {"type" : "t" }  `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := decodeDeviceEdit(body)
		if err != nil {
			var p *problem
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest || p.Type != problemTypePrefix+slugInvalidBody {
				t.Fatalf("error %v is not a 400 invalid-body problem", err)
			}
			for _, fe := range p.Errors {
				if fe.Pointer == nil || (*fe.Pointer != "" && !strings.HasPrefix(*fe.Pointer, "/")) {
					t.Fatalf("bad pointer in %+v", p.Errors)
				}
			}
			return
		}
		n := 0
		for _, f := range editFields {
			if v := *f.dst(&e); v != nil {
				n++
				if *v == "" || command.CheckField(f.name, *v) != "" || !utf8.ValidString(*v) {
					t.Fatalf("accepted %s = %q", f.name, *v)
				}
			}
		}
		if e.Ignored != nil {
			n++
		}
		if n+len(e.Clear) == 0 {
			t.Fatalf("accepted an edit that changes nothing: %q", body)
		}
		again, err := decodeDeviceEdit(encodeDeviceEdit(e))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("round trip of %+v: %+v, %v", e, again, err)
		}
	})
}

// FuzzWatchBody: decoding never panics and errors are 400 problems.
func FuzzWatchBody(f *testing.F) {
	for _, s := range []string{`{"watched":true}`, `{"watched":false}`, `{}`, `{"watched":1}`, `{"x":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := decodeWatch(body)
		if err != nil {
			var p *problem
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
				t.Fatalf("error %v is not a 400 problem", err)
			}
			return
		}
		if want := strings.Contains(string(body), "true"); w != want {
			t.Fatalf("%q decoded to %v", body, w)
		}
	})
}
