package httpapi

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrConfig wraps every error of Config.Validate.
	ErrConfig = errors.New("httpapi: invalid configuration")
	// ErrDeps is returned by New when a required dependency is missing.
	ErrDeps = errors.New("httpapi: missing dependency")
	// ErrSpec is returned by New when the embedded OpenAPI document does
	// not convert to JSON (a build defect).
	ErrSpec = errors.New("httpapi: embedded OpenAPI document")
)

func errMissingDep(name string) error {
	return fmt.Errorf("%w: Deps.%s is nil", ErrDeps, name)
}

func configError(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, key, fmt.Sprintf(format, args...))
}
