package oui

import "errors"

var (
	// ErrNoData is returned by Load when the binary was built without the
	// generated data file; the registry it returns is empty but usable.
	ErrNoData = errors.New("oui: registry data not embedded (run the generator in projections/oui/gen, see projections/oui/data/README.md)")
	// ErrBadData is returned when the registry data is malformed.
	ErrBadData = errors.New("malformed OUI registry data")
)
