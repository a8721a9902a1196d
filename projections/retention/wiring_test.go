package retention

import (
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

// The store appends the purge; the inventory plans it; the runner applies
// it and compacts.
var (
	_ Appender  = (*store.Store)(nil)
	_ Planner   = (*inventory.Inventory)(nil)
	_ Compactor = (*runner.Runner)(nil)
)
