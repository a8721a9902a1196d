package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Default file locations, in lookup order after --config and SVC_CONFIG.
const (
	LocalFile  = "jocasta.yaml"
	SystemFile = "/etc/jocasta/config.yaml"
)

// Find returns the configuration file to load: flagPath (--config) if
// given, else $SVC_CONFIG from environ, else ./jocasta.yaml, else
// /etc/jocasta/config.yaml if it exists; "" when none exists (defaults and
// SVC_ variables only). A file named by --config or SVC_CONFIG must exist:
// otherwise the error wraps ErrNotFound.
func Find(flagPath string, environ []string) (string, error) {
	return find(flagPath, environ, []string{LocalFile, SystemFile})
}

func find(flagPath string, environ []string, candidates []string) (string, error) {
	if flagPath != "" {
		return explicit(flagPath, "--config")
	}
	if p := lookupEnv(environ, envConfig); p != "" {
		return explicit(p, envConfig)
	}
	for _, p := range candidates {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return "", fmt.Errorf("config: %s is a directory, not a file", p)
		case err == nil:
			return p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("config: look for %s: %w", p, err)
		}
	}
	return "", nil
}

func explicit(p, by string) (string, error) {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", notFoundError{fmt.Sprintf("config: %s names %s, which does not exist; create it with `jocasta init --output %s` or fix the path", by, p, p)}
	case err != nil:
		return "", fmt.Errorf("config: open %s (from %s): %w", p, by, err)
	case st.IsDir():
		return "", fmt.Errorf("config: %s names %s, which is a directory; name the YAML file", by, p)
	}
	return p, nil
}

// lookupEnv finds name in environ; the first occurrence wins, as with os.Getenv.
func lookupEnv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// notFoundError is a missing --config or SVC_CONFIG file: one line that
// says what to do, which matches ErrNotFound with errors.Is.
type notFoundError struct{ msg string }

func (e notFoundError) Error() string        { return e.msg }
func (e notFoundError) Is(target error) bool { return target == ErrNotFound }
