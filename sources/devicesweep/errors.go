package devicesweep

import "errors"

// ErrConfig wraps every configuration problem reported by [New].
var ErrConfig = errors.New("devicesweep: bad configuration")
