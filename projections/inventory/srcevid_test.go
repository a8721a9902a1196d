package inventory

import (
	"fmt"
	"sync"
	"testing"
	"time"
	"unsafe"
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
		if tc.at.IsZero() != (got.Time == time.Time{}) || tc.at.IsZero() != (e == srcEvid{src: sourceIDOf("sweep")}) {
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

// TestSourceID: a name has one ID, which gives it back, from any
// goroutine; "" is 0; evidence is 16 bytes.
func TestSourceID(t *testing.T) {
	if sourceIDOf("") != 0 || sourceID(0).name() != "" {
		t.Fatal(`"" is not 0`)
	}
	var wg sync.WaitGroup
	ids := make([][]sourceID, 4)
	for g := range ids {
		wg.Go(func() {
			for k := range 200 {
				ids[g] = append(ids[g], sourceIDOf(fmt.Sprintf("test-source-%d", (k*7+g)%200)))
			}
		})
	}
	wg.Wait()
	seen := map[sourceID]string{}
	for g := range ids {
		for k, id := range ids[g] {
			name := fmt.Sprintf("test-source-%d", (k*7+g)%200)
			if id == 0 || id.name() != name {
				t.Fatalf("%s: id %d names %q", name, id, id.name())
			}
			if other, ok := seen[id]; ok && other != name {
				t.Fatalf("id %d for both %q and %q", id, name, other)
			}
			seen[id] = name
		}
	}
	if len(seen) != 200 {
		t.Fatalf("%d ids for 200 names", len(seen))
	}
	if n := unsafe.Sizeof(srcEvid{}); n != 16 {
		t.Fatalf("srcEvid is %d bytes", n)
	}
}
