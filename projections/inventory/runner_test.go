package inventory

import (
	"github.com/jocasta/jocasta/projections/runner"
)

// The runner drives the projection, prepares its payloads off the apply
// goroutine and flushes its rows once per batch.
var (
	_ runner.Projection = (*Inventory)(nil)
	_ runner.Preparer   = (*Inventory)(nil)
	_ runner.Flusher    = (*Inventory)(nil)
)
