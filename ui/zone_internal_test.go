package ui

import (
	"strings"
	"testing"
	"time"
)

// The pages name the zone times are in; the system zone (time.Local,
// named "Local" when TZ is unset) is not shown as "Local".
func TestZoneName(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if got := zoneName(time.UTC, now); got != "UTC" {
		t.Errorf("UTC: %q", got)
	}
	if berlin, err := time.LoadLocation("Europe/Berlin"); err == nil {
		if got := zoneName(berlin, now); got != "Europe/Berlin" {
			t.Errorf("a named zone: %q", got)
		}
	}
	local := time.FixedZone("Local", 3600) // as time.Local is named without TZ
	t.Setenv("TZ", "")
	if got := zoneName(local, now); got != "the system's time zone (UTC+01:00)" {
		t.Errorf("the system zone: %q", got)
	}
	t.Setenv("TZ", "Europe/Lisbon")
	if got := zoneName(local, now); got != "Europe/Lisbon (UTC+01:00)" {
		t.Errorf("the system zone with TZ set: %q", got)
	}
	if strings.Contains(zoneName(local, now), "Local") {
		t.Error("Local shown")
	}
}
