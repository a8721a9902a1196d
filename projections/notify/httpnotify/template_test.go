package httpnotify

import (
	"bytes"
	"testing"
)

func TestParseBody(t *testing.T) {
	type device struct {
		Name  string
		Label string
	}
	data := map[string]any{
		"Kind":    "device.discovered",
		"Summary": `New device "tv" <found>`,
		"Device":  device{Name: "tv"},
		"Tags":    []string{},
	}
	tests := []struct{ body, want string }{
		{`{"text": {{json .Summary}}}`, `{"text": "New device \"tv\" \u003cfound\u003e"}`},
		{`{{upper .Kind}}`, "DEVICE.DISCOVERED"},
		{`{{lower "ABC"}}`, "abc"},
		{`{{.Device.Label | default "unnamed"}}`, "unnamed"},
		{`{{.Device.Name | default "unnamed"}}`, "tv"},
		{`{{default "none" .Tags}}`, "none"},
		{`{{default "zero" 0}}`, "zero"},
		{`{{json .Device}}`, `{"Name":"tv","Label":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			tpl, err := ParseBody(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := tpl.Execute(&b, data); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got %s, want %s", b.String(), tt.want)
			}
		})
	}
	tpl, _ := ParseBody(`{{.Missing}}`)
	if err := tpl.Execute(&bytes.Buffer{}, data); err == nil {
		t.Errorf("a missing key executed without error")
	}
}
