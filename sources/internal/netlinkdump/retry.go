package netlinkdump

import (
	"errors"

	"github.com/vishvananda/netlink"
)

// Attempts is how many times [Retry] reads an interrupted dump.
const Attempts = 3

// Retry calls dump until it returns something other than
// [netlink.ErrDumpInterrupted], at most [Attempts] times, and returns the
// last result.
func Retry[T any](dump func() ([]T, error)) ([]T, error) {
	var (
		v   []T
		err error
	)
	for range Attempts {
		v, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, err
}
