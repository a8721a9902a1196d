package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadYAML writes src to a temporary jocasta.yaml and loads it with env.
func loadYAML(t *testing.T, src string, env ...string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jocasta.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(path, env)
}

// mustLoad loads src and fails the test on any problem.
func mustLoad(t *testing.T, src string, env ...string) *Config {
	t.Helper()
	c, err := loadYAML(t, src, env...)
	if err != nil {
		t.Fatalf("Load: %v\n--- file:\n%s", err, src)
	}
	return c
}

// problems loads src and returns its problems; it fails if there are none.
func problems(t *testing.T, src string, env ...string) []Problem {
	t.Helper()
	_, err := loadYAML(t, src, env...)
	if err == nil {
		t.Fatalf("Load accepted:\n%s", src)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load: %v (%T), want *Error", err, err)
	}
	return ce.Problems
}

// findProblem returns the problem about key, failing if there is none.
func findProblem(t *testing.T, ps []Problem, key string) Problem {
	t.Helper()
	for _, p := range ps {
		if p.Key == key {
			return p
		}
	}
	t.Fatalf("no problem for %q in:\n%s", key, render(ps))
	return Problem{}
}

func render(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.String()
}
