package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events/command"
)

// maxBodyBytes is the largest request body accepted (64 KiB).
const maxBodyBytes = 64 << 10

// readJSONBody checks the content type (application/json or
// application/merge-patch+json, with at most a charset=utf-8 parameter)
// and reads at most maxBodyBytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && mt != "application/merge-patch+json") {
		return nil, errUnsupportedType(ct)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return nil, errUnsupportedType(ct)
		}
	}
	if r.ContentLength > maxBodyBytes {
		return nil, errBodyTooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errBodyTooLarge()
	}
	if err != nil {
		return nil, fmt.Errorf("httpapi: reading request body: %w", err)
	}
	return body, nil
}

// member is one member of a JSON object, in document order.
type member struct {
	name  string
	value json.RawMessage
}

// decodeObject parses body as exactly one JSON object and returns its
// members. Invalid UTF-8, a syntax error, anything but an object,
// duplicate names and data after the object are 400 problems.
func decodeObject(body []byte, example string) ([]member, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, bodyError("the body is empty: send a JSON object", pointerError("", "send a JSON object"))
	}
	if !utf8.Valid(body) {
		return nil, bodyError("the body is not valid UTF-8: send UTF-8 JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxProblem(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bodyError("the body must be a JSON object, e.g. "+example, pointerError("", "not a JSON object"))
	}
	var (
		members []member
		seen    = map[string]bool{}
		errs    []fieldError
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxProblem(err)
		}
		name, ok := tok.(string)
		if !ok { // cannot happen: the decoder checks object keys
			return nil, bodyError("the body is not valid JSON")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxProblem(err)
		}
		if seen[name] {
			errs = append(errs, pointerError(jsonPointer(name), "given more than once: give each member once"))
			continue
		}
		seen[name] = true
		members = append(members, member{name: name, value: raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bodyError("there is data after the JSON object: send one object only", pointerError("", "data after the object"))
	}
	if len(errs) > 0 {
		return nil, fieldsProblem(errs)
	}
	return members, nil
}

func syntaxProblem(err error) *problem {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return bodyError(fmt.Sprintf("the body is not valid JSON (%s at byte %d): send a JSON object", se.Error(), se.Offset))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return bodyError("the body ends before the JSON object does: send a complete JSON object")
	default:
		return bodyError("the body is not valid JSON: send a JSON object")
	}
}

// fieldsProblem is a 400 listing every bad member.
func fieldsProblem(errs []fieldError) *problem {
	first := *errs[0].Pointer + ": " + errs[0].Detail
	d := first
	if len(errs) > 1 {
		d = fmt.Sprintf("%d members are not valid (see errors); first, %s", len(errs), first)
	}
	return bodyError(d, errs...)
}

// jsonPointer is the RFC 6901 pointer to a top-level member.
func jsonPointer(name string) string {
	return "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// editField is one editable text field of a device. Its rules (length,
// characters) are the write side's: command.CheckField.
type editField struct {
	name string
	dst  func(*command.DeviceEdit) **string
}

var editFields = []editField{
	{"label", func(e *command.DeviceEdit) **string { return &e.Label }},
	{"group", func(e *command.DeviceEdit) **string { return &e.Group }},
	{"type", func(e *command.DeviceEdit) **string { return &e.Type }},
	{"notes", func(e *command.DeviceEdit) **string { return &e.Notes }},
}

const editableNames = "label, group, type, notes and ignored"

// decodeDeviceEdit reads the body of PATCH /api/devices/{id} (RFC 7396
// merge patch of the editable fields):
//   - label (≤128 characters), group (≤64), type (≤64), notes (≤4096):
//     a non-empty string sets the field, null clears it (Cleared). Control
//     characters are refused (notes may hold tab and line breaks). An
//     empty string is refused: null is how a field is cleared.
//   - ignored: true or false; null means false.
//   - Any other member, a wrong type, a duplicate member or an object with
//     no member is a 400 naming the member by JSON pointer.
func decodeDeviceEdit(body []byte) (command.DeviceEdit, error) {
	var e command.DeviceEdit
	members, err := decodeObject(body, `{"label": "printer"}`)
	if err != nil {
		return e, err
	}
	if len(members) == 0 {
		return e, bodyError("the body changes nothing: give at least one of "+editableNames,
			pointerError("", "no member: give at least one of "+editableNames))
	}
	var errs []fieldError
	cleared := map[string]bool{}
	for _, m := range members {
		ptr := jsonPointer(m.name)
		if m.name == "ignored" {
			switch string(m.value) {
			case "true", "false", "null":
				b := string(m.value) == "true"
				e.Ignored = &b
			default:
				errs = append(errs, pointerError(ptr, "must be true, false or null"))
			}
			continue
		}
		i := fieldIndex(m.name)
		if i < 0 {
			errs = append(errs, pointerError(ptr, "unknown member: a device takes "+editableNames))
			continue
		}
		f := editFields[i]
		if string(m.value) == "null" {
			cleared[f.name] = true
			continue
		}
		var v string
		if m.value[0] != '"' || json.Unmarshal(m.value, &v) != nil {
			errs = append(errs, pointerError(ptr, "must be a string or null"))
			continue
		}
		if d := command.CheckField(f.name, v); d != "" {
			errs = append(errs, pointerError(ptr, d))
			continue
		}
		*f.dst(&e) = &v
	}
	if len(errs) > 0 {
		return command.DeviceEdit{}, fieldsProblem(errs)
	}
	for _, f := range editFields {
		if cleared[f.name] {
			e.Clear = append(e.Clear, f.name)
		}
	}
	return e, nil
}

func fieldIndex(name string) int {
	for i, f := range editFields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// encodeDeviceEdit writes e as a merge-patch body that decodeDeviceEdit
// reads back to e (tests and fuzzing use it).
func encodeDeviceEdit(e command.DeviceEdit) []byte {
	obj := map[string]any{}
	for _, f := range editFields {
		if p := *f.dst(&e); p != nil {
			obj[f.name] = *p
		}
	}
	for _, name := range e.Clear {
		obj[name] = nil
	}
	if e.Ignored != nil {
		obj["ignored"] = *e.Ignored
	}
	b, _ := json.Marshal(obj) // strings, bools and nulls always encode
	return b
}

// decodeWatch reads the body of PATCH /api/devices/{id}/watch:
// {"watched": true|false}, nothing else.
func decodeWatch(body []byte) (bool, error) {
	members, err := decodeObject(body, `{"watched": true}`)
	if err != nil {
		return false, err
	}
	var (
		watched *bool
		errs    []fieldError
	)
	for _, m := range members {
		if m.name != "watched" {
			errs = append(errs, pointerError(jsonPointer(m.name), "unknown member: send only watched"))
			continue
		}
		switch string(m.value) {
		case "true", "false":
			b := string(m.value) == "true"
			watched = &b
		default:
			errs = append(errs, pointerError("/watched", "must be true or false"))
		}
	}
	if watched == nil && len(errs) == 0 {
		errs = append(errs, pointerError("/watched", "missing: send {\"watched\": true} or {\"watched\": false}"))
	}
	if len(errs) > 0 {
		return false, fieldsProblem(errs)
	}
	return *watched, nil
}
