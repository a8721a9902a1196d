package ui

import (
	"strings"
	"testing"
	"time"
)

// The pages name the zone times are in; the system zone is not "Local".
func TestZoneName(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	if got := zoneName(berlin, now); got != "Europe/Berlin" {
		t.Errorf("a named zone: %q", got)
	}
	if got := zoneName(time.UTC, now); got != "UTC" {
		t.Errorf("UTC: %q", got)
	}
	t.Setenv("TZ", "Europe/Lisbon")
	if got := zoneName(time.Local, now); !strings.HasPrefix(got, "Europe/Lisbon (") {
		t.Errorf("the system zone with TZ set: %q", got)
	}
	t.Setenv("TZ", "")
	if got := zoneName(time.Local, now); !strings.HasPrefix(got, "the system's time zone (") || strings.Contains(got, "Local") {
		t.Errorf("the system zone: %q", got)
	}
}
