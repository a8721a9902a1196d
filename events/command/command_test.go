package command

import (
	"strings"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

func ptr[T any](v T) *T { return &v }

func TestCheckField(t *testing.T) {
	tests := []struct {
		field, value, want string // want: a part of the answer, "" for none
	}{
		{"label", "printer", ""},
		{"label", strings.Repeat("ü", MaxLabel), ""},
		{"label", strings.Repeat("ü", MaxLabel+1), "129 characters long: use at most 128"},
		{"group", strings.Repeat("g", MaxGroup+1), "use at most 64"},
		{"type", strings.Repeat("t", MaxType+1), "use at most 64"},
		{"notes", strings.Repeat("n", MaxNotes), ""},
		{"notes", "line\nbreaks\tand tabs", ""},
		{"label", "line\nbreak", "control character"},
		{"label", "", "send null to clear"},
		{"label", "abc\u202egnp.exe", "bidirectional"},
		{"notes", "a\uFFFDb", "lone surrogate"},
		{"vendor", "x", "not an editable field"},
	}
	for _, tc := range tests {
		got := CheckField(tc.field, tc.value)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("CheckField(%s, %.20q) = %q, want %q", tc.field, tc.value, got, tc.want)
		}
	}
}

func TestDeviceEditValidate(t *testing.T) {
	e := DeviceEdit{Label: ptr(""), Notes: ptr("ok"), Clear: []string{"group", "ignored", "vendor"}}
	errs := e.Validate()
	var fields []string
	for _, f := range errs {
		fields = append(fields, f.Field)
	}
	if strings.Join(fields, ",") != "label,ignored,vendor" {
		t.Fatalf("invalid fields %v, want label, ignored, vendor", fields)
	}
}

func TestDeviceEditChanges(t *testing.T) {
	dev := projections.Device{Label: ptr("nas"), Notes: ptr("rack 2"), Ignored: true}
	tests := []struct {
		name string
		edit DeviceEdit
		want bool
	}{
		{"same label", DeviceEdit{Label: ptr("nas")}, false},
		{"same label and notes", DeviceEdit{Label: ptr("nas"), Notes: ptr("rack 2")}, false},
		{"same ignored", DeviceEdit{Ignored: ptr(true)}, false},
		{"clear an empty group", DeviceEdit{Clear: []string{"group"}}, false},
		{"new label", DeviceEdit{Label: ptr("NAS")}, true},
		{"new group", DeviceEdit{Group: ptr("lab")}, true},
		{"unignore", DeviceEdit{Ignored: ptr(false)}, true},
		{"clear notes", DeviceEdit{Clear: []string{"notes"}}, true},
	}
	for _, tc := range tests {
		if got := tc.edit.changes(dev); got != tc.want {
			t.Errorf("%s: changes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
