package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a configuration duration: a whole number of seconds, minutes
// or hours written with one unit ("90s", "15m", "720h"; "0s" is allowed).
// time.ParseDuration is deliberately not used for input: it also takes
// fractions, compounds, negative values and sub-second units, which the
// contract rules out.
type Duration time.Duration

// maxDurationDigits bounds the number part, as ^[0-9]{1,9}[smh]$.
const maxDurationDigits = 9

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String gives d in the form it is written in: the largest of h, m and s that
// divides it ("720h", "90m", "45s", "0s"). A value that is not whole seconds
// or is negative (never produced by parsing) falls back to time.Duration's form.
func (d Duration) String() string {
	td := time.Duration(d)
	switch {
	case td == 0:
		return "0s"
	case td < 0 || td%time.Second != 0:
		return td.String()
	case td%time.Hour == 0:
		return strconv.FormatInt(int64(td/time.Hour), 10) + "h"
	case td%time.Minute == 0:
		return strconv.FormatInt(int64(td/time.Minute), 10) + "m"
	default:
		return strconv.FormatInt(int64(td/time.Second), 10) + "s"
	}
}

// MarshalText writes d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts only ^[0-9]{1,9}[smh]$. The error says what to write
// instead (for example "1h30m" suggests "90m").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// errDurationSyntax is the common part of every duration error.
var errDurationSyntax = errors.New("want a whole number followed by s, m or h (e.g. 90s, 15m, 720h)")

// ParseDuration parses a configuration duration (see Duration).
func ParseDuration(s string) (Duration, error) {
	if n := len(s); n >= 2 && n <= maxDurationDigits+1 && allDigits(s[:n-1]) {
		var unit time.Duration
		switch s[n-1] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		}
		if unit != 0 {
			v, _ := strconv.ParseInt(s[:n-1], 10, 64) // at most 9 digits: cannot fail
			if v > math.MaxInt64/int64(unit) {
				return 0, fmt.Errorf("%w, got %q: too long, the most is %dh", errDurationSyntax, s, math.MaxInt64/int64(time.Hour))
			}
			return Duration(time.Duration(v) * unit), nil
		}
	}
	return 0, fmt.Errorf("%w, got %q%s", errDurationSyntax, s, durationHint(s))
}

// durationHint suggests the accepted form of a rejected duration.
func durationHint(s string) string {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return ""
	case t != s:
		return "; remove the spaces"
	case allDigits(t):
		return "; add a unit, e.g. " + t + "s"
	case strings.HasPrefix(t, "-"):
		return "; a duration cannot be negative"
	case len(t) > 1 && t[len(t)-1] == 'd' && allDigits(t[:len(t)-1]):
		if v, err := strconv.Atoi(t[:len(t)-1]); err == nil && v <= 1e6 {
			return fmt.Sprintf("; there is no day unit, write %dh", v*24)
		}
		return "; there is no day unit, use h"
	case len(t)-1 > maxDurationDigits && allDigits(t[:len(t)-1]):
		return fmt.Sprintf("; at most %d digits, use a larger unit", maxDurationDigits)
	}
	if td, err := time.ParseDuration(t); err == nil {
		if td%time.Second == 0 {
			return "; write it with one unit: " + Duration(td).String()
		}
		return "; the smallest unit is s (whole seconds)"
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
