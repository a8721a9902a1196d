package dnsfilter1

import (
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	// The fakes run for the whole suite, started before it counts
	// goroutines: only the reader's own must be gone after a poll.
	working := serve(t, lab())
	failing := lab()
	failing.Fault("queries", "500")
	failingCfg := serve(t, failing)
	hanging := lab()
	hanging.Delay = time.Hour
	hanging.Fault("auth", "slow")
	hangingCfg := serve(t, hanging)
	sourcetest.TestPoller(t, sourcetest.Features{
		Kind:    "dnsfilter1",
		Working: func(t *testing.T) sources.Poller { return newReader(t, working, "", sources.DNSReaderOptions{}) },
		Failing: func(t *testing.T) sources.Poller { return newReader(t, failingCfg, "", sources.DNSReaderOptions{}) },
		Hanging: func(t *testing.T) sources.Poller { return newReader(t, hangingCfg, "", sources.DNSReaderOptions{}) },
	})
}
