package portscan

import "errors"

// ErrBadPorts wraps every port-list syntax error from [ParsePorts].
var ErrBadPorts = errors.New("portscan: bad port list")

// ErrBadParams is returned by [Scan] for an invalid target or parameter.
var ErrBadParams = errors.New("portscan: bad parameters")
