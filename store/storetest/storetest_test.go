package storetest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store/storetest"
)

// recorder is a testing.TB whose cleanups and errors are captured.
type recorder struct {
	*testing.T
	cleanups []func()
	errs     []string
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestOpenChecksAndCloses(t *testing.T) {
	for _, c := range []struct {
		name       string
		closeFirst bool
		wantEvents int
	}{
		{"open at cleanup", false, 3},
		{"closed by the test", true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{T: t}
			s := storetest.Open(r)
			for range c.wantEvents {
				e := events.MustNew(events.KindTokenRevoked, events.TokenRevoked{TokenID: "x"}, testTime)
				if _, err := s.Append(t.Context(), e); err != nil {
					t.Fatal(err)
				}
			}
			if c.closeFirst {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			r.runCleanups()
			if len(r.errs) != 0 {
				t.Errorf("cleanup reported %v", r.errs)
			}
			if _, err := s.Read(1, 1); err == nil {
				t.Error("store still open after cleanup")
			}
		})
	}
}

var testTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
