package access

import "github.com/jocasta/jocasta/projections/runner"

// The runner drives the projection.
var _ runner.Projection = (*Projection)(nil)
