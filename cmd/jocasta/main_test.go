package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that serve, the control socket and the admin commands
// leave no goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Keep-alive connections of the test clients' transports.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
