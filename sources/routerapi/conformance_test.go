package routerapi_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	// The fake peers run for the whole suite, started before it counts
	// goroutines: only the reader's own must be gone after a poll.
	start := func(f *routerapitest.Fake) string {
		ts := httptest.NewServer(f)
		t.Cleanup(ts.Close)
		return ts.URL
	}
	working := start(lab())
	failing := lab()
	failing.Fault("system/identity", "401")
	failingURL := start(failing)
	hanging := lab()
	hanging.Delay = time.Hour
	hanging.Fault("system/identity", "slow")
	hangingURL := start(hanging)

	sourcetest.TestPoller(t, sourcetest.Features{
		Kind:    "routerapi",
		Working: func(t *testing.T) sources.Poller { return reader(t, working, nil) },
		Failing: func(t *testing.T) sources.Poller { return reader(t, failingURL, nil) },
		Hanging: func(t *testing.T) sources.Poller { return reader(t, hangingURL, nil) },
	})
}
