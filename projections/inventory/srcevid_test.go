package inventory

import (
	"testing"
	"time"
)

// TestSrcEvid: the compact evidence gives back the instant it was given
// (in UTC), the zero time as zero, and orders by instant whatever the
// zone it was given in.
func TestSrcEvid(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"zero", time.Time{}},
		{"UTC with nanoseconds", time.Date(2026, 11, 28, 19, 50, 1, 123456789, time.UTC)},
		{"another zone", time.Date(2026, 11, 28, 20, 50, 1, 5, paris)},
		{"the Unix epoch", time.Unix(0, 0)},
		{"year 1, a nanosecond in", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		{"before year 1", time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{"with a monotonic reading", time.Now()},
	} {
		e := srcEvidOf("sweep", tc.at)
		got := e.evid()
		if got.Source != "sweep" || got.Actor != "" || !got.Time.Equal(tc.at) || got.Time.Location() != time.UTC {
			t.Errorf("%s: %+v (zone %v), want %v in UTC", tc.name, got, got.Time.Location(), tc.at)
		}
		if tc.at.IsZero() != (got.Time == time.Time{}) || tc.at.IsZero() != (e == srcEvid{src: "sweep"}) {
			t.Errorf("%s: zero time %v, read back %v (%+v)", tc.name, tc.at.IsZero(), got.Time, e)
		}
	}
	early := srcEvidOf("a", time.Date(2026, 11, 28, 20, 0, 0, 5, paris)) // 19:00:00.000000005 UTC
	late := srcEvidOf("b", time.Date(2026, 11, 28, 19, 0, 0, 6, time.UTC))
	same := srcEvidOf("c", time.Date(2026, 11, 28, 19, 0, 0, 5, time.UTC))
	if !late.after(early) || early.after(late) || same.after(early) || early.after(same) {
		t.Error("after does not order by instant")
	}
	if !early.after(srcEvid{}) {
		t.Error("evidence is not after none")
	}
}
