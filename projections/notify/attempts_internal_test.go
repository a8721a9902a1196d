package notify

import (
	"log/slog"
	"testing"
	"time"
)

// TestAttemptsOfARetryWindowKept: a change that keeps failing for the
// whole retry window with the default backoff keeps every attempt in its
// record (the "every attempt"); past that (a re-delivery that
// fails again) the first and the latest are kept and the rest counted.
func TestAttemptsOfARetryWindowKept(t *testing.T) {
	o := Options{RetryFor: DefaultRetryFor, BackoffMin: DefaultBackoffMin, BackoffMax: DefaultBackoffMax, Log: slog.New(slog.DiscardHandler)}
	s := &sender{d: &Dispatcher{o: o}, dest: &Destination{Name: "phone"}}
	fail := result{status: 503, err: "503 Service Unavailable", retryable: true}
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var r Record
	window := func() int {
		n := 0
		for r.State != StateDead {
			s.settleQuiet(&r, fail, now)
			n++
			if r.State == StatePending || r.NextAttempt != nil {
				now = *r.NextAttempt
			}
			if n > 10*maxAttemptsKept {
				t.Fatal("never dead")
			}
			if r.State == "" && r.NextAttempt == nil {
				t.Fatalf("attempt %d: neither retried nor dead: %+v", n, r)
			}
		}
		return n
	}
	n := window()
	if len(r.Attempts) != n || r.AttemptsOmitted != 0 {
		t.Fatalf("%d attempts over 24 h, %d kept, %d omitted: want all kept", n, len(r.Attempts), r.AttemptsOmitted)
	}
	t.Logf("%d attempts in the retry window", n)
	first := r.Attempts[0]

	// Re-delivered (as Redeliver does), failing again.
	for range 3 {
		at := now
		r.State, r.Reason, r.RetryFrom, r.NextAttempt = StatePending, "", &at, &at
		n += window()
	}
	if len(r.Attempts) != maxAttemptsKept || r.Attempts[0] != first || len(r.Attempts)+r.AttemptsOmitted != n {
		t.Fatalf("after re-deliveries: %d attempts made, %d kept, %d omitted, first %+v (was %+v)",
			n, len(r.Attempts), r.AttemptsOmitted, r.Attempts[0], first)
	}
	if last := r.Attempts[len(r.Attempts)-1]; !last.Time.Equal(now) {
		t.Errorf("the latest attempt kept is at %s, the last one made at %s", last.Time, now)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"1.5", 0},
		{"soon", 0},
		{"Sat, 28 Nov 2026 12:10:00 GMT", 10 * time.Minute}, // an HTTP-date
		{"Saturday, 28-Nov-26 12:00:30 GMT", 30 * time.Second},
		{"Sat, 28 Nov 2026 11:00:00 GMT", 0}, // past
		{"99999999999", maxRetryAfter},
		{"Mon, 01 Jan 2029 00:00:00 GMT", maxRetryAfter},
	} {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("Retry-After %q: %s, want %s", tc.v, got, tc.want)
		}
	}
}
