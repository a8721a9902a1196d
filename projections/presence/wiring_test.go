package presence

import (
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/store"
)

// The store appends the clock's ticks; the inventory gives its deadlines.
var (
	_ Appender  = (*store.Store)(nil)
	_ Deadlines = (*inventory.Inventory)(nil)
)
