package store_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jocasta/jocasta/store"
	"go.uber.org/goleak"
)

// TestMain doubles as the helper processes of the lock and crash tests:
// the test binary re-executes itself with one of these variables set.
func TestMain(m *testing.M) {
	if path := os.Getenv("JOCASTA_LOCK_CHILD"); path != "" {
		_, err := store.Open(path, store.Options{LockTimeout: 300 * time.Millisecond})
		fmt.Printf("%t\n%v\n", errors.Is(err, store.ErrLocked), err)
		os.Exit(0)
	}
	if path := os.Getenv("JOCASTA_CRASH_CHILD"); path != "" {
		crashChild(path) // never returns: the parent kills it
		os.Exit(3)
	}
	// Every store a test opens must stop its writer goroutine on Close.
	goleak.VerifyTestMain(m)
}
