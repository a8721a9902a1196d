package dnsfilter2

import (
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	working := serve(t, lab())
	failing := lab()
	failing.Fault("500")
	failingCfg := serve(t, failing)
	hanging := lab()
	hanging.Delay = time.Hour
	hanging.Fault("slow")
	hangingCfg := serve(t, hanging)
	sourcetest.TestPoller(t, sourcetest.Features{
		Kind:    "dnsfilter2",
		Working: func(t *testing.T) sources.Poller { return newReader(t, working, "", sources.DNSReaderOptions{}) },
		Failing: func(t *testing.T) sources.Poller { return newReader(t, failingCfg, "", sources.DNSReaderOptions{}) },
		Hanging: func(t *testing.T) sources.Poller { return newReader(t, hangingCfg, "", sources.DNSReaderOptions{}) },
	})
}
