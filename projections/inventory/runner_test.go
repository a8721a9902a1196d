package inventory

import (
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

// The runner drives the projection, prepares its payloads off the apply
// goroutine and flushes its rows once per batch; the store appends the
// clock's and the purger's events; the runner compacts.
var (
	_ runner.Projection = (*Inventory)(nil)
	_ runner.Preparer   = (*Inventory)(nil)
	_ runner.Flusher    = (*Inventory)(nil)
	_ Appender          = (*store.Store)(nil)
	_ Compactor         = (*runner.Runner)(nil)
)
