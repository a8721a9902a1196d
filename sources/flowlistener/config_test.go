package flowlistener

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	exp := []netip.Addr{netip.MustParseAddr("192.0.2.1")}
	tests := []struct {
		name string
		c    Config
		keys []string // the keys with a problem
	}{
		{"defaults, off", func() Config { var c Config; c.SetDefaults(); return c }(), nil},
		{"enabled with exporters", Config{Enabled: true, Listen: ":2055", Exporters: exp}, nil},
		{"enabled without exporters", Config{Enabled: true, Listen: ":2055"}, []string{"exporters"}},
		{"an address and port", Config{Listen: "[::1]:9995"}, nil},
		{"no port", Config{Listen: "192.0.2.1"}, []string{"listen"}},
		{"port 0", Config{Listen: ":0"}, []string{"listen"}},
		{"port too big", Config{Listen: ":70000"}, []string{"listen"}},
		{"both wrong", Config{Enabled: true, Listen: "nonsense"}, []string{"listen", "exporters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			var keys []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *FieldError
					if !errors.As(e, &fe) || fe.Message() == "" {
						t.Fatalf("%v is not a FieldError with a message", e)
					}
					keys = append(keys, fe.Key())
				}
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
				t.Fatalf("problems at %v, want %v (%v)", keys, tc.keys, err)
			}
		})
	}
}
