package flowlistener

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultListen is where an instance listens when listen is not set.
const DefaultListen = ":2055"

// Config is one instance (plugins.flowlistener.<name>).
type Config struct {
	Enabled   bool         `yaml:"enabled"`
	Listen    string       `yaml:"listen"`    // default DefaultListen; ":port" or "ip:port" ("[v6]:port")
	Exporters []netip.Addr `yaml:"exporters"` // required (non-empty) when enabled
}

// SetDefaults fills the defaults of a new instance before its keys are
// decoded.
func (c *Config) SetDefaults() { c.Listen = DefaultListen }

// FieldError is a problem with one key of an instance: Key is relative
// to the instance ("listen"), Message says what to change, and AtKey
// says it concerns the key itself (required, missing) rather than its
// value.
type FieldError struct {
	key, msg string
	atKey    bool
}

func (e *FieldError) Error() string   { return e.key + ": " + e.msg }
func (e *FieldError) Key() string     { return e.key }
func (e *FieldError) Message() string { return e.msg }
func (e *FieldError) AtKey() bool     { return e.atKey }

// Validate reports every problem of the instance at once, each a
// *FieldError (errors.Join).
func (c Config) Validate() error {
	var errs []error
	if msg := ListenProblem(c.Listen); msg != "" {
		errs = append(errs, &FieldError{key: "listen", msg: msg})
	}
	if len(c.Exporters) == 0 && c.Enabled {
		errs = append(errs, &FieldError{key: "exporters", msg: "required when the listener is enabled: list the routers that may send, e.g. exporters: [192.168.1.1]", atKey: true})
	}
	return errors.Join(errs...)
}

// ListenProblem checks a UDP listen address: ":port" or "ip:port".
func ListenProblem(s string) string {
	const form = "want a UDP address as :<port> or <ip>:<port>, e.g. :2055 or 192.168.1.2:2055"
	if port, ok := strings.CutPrefix(s, ":"); ok {
		if n, err := strconv.Atoi(port); err == nil && n >= 1 && n <= 65535 && allDigits(port) {
			return ""
		}
		return fmt.Sprintf("%s, got %q; the port must be 1 to 65535", form, s)
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			return fmt.Sprintf("%s, got %q; add the port, e.g. %s", form, s, netip.AddrPortFrom(a, 2055))
		}
		return fmt.Sprintf("%s, got %q", form, s)
	}
	if ap.Port() == 0 {
		return fmt.Sprintf("%s, got %q; the port must be 1 to 65535", form, s)
	}
	return ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
