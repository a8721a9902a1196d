package remote

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (a sender, the
// central's consumer, the embedded server, a NATS connection) outlives
// them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
