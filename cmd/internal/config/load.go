package config

import (
	"fmt"
	"io"
	"os"
)

// maxFileSize bounds the configuration file; a real one is a few KiB.
const maxFileSize = 1 << 20

// Load reads the configuration: the defaults, then the YAML file at path
// (none when path is ""), then the SVC_ variables of environ (in
// os.Environ form; pass os.Environ() in main and a fixed list in tests),
// then the checks. Every problem is reported at once, as an *Error. A file
// that cannot be read is a plain wrapped error (errors.Is(err,
// fs.ErrNotExist) works).
func Load(path string, environ []string) (*Config, error) {
	c := Defaults()
	l := newLoader(path)
	if path != "" {
		src, err := readFile(path)
		if err != nil {
			return nil, err
		}
		l.decodeFile(src, &c)
	}
	l.applyEnv(environ, &c)
	l.validate(&c)
	if len(l.problems) > 0 {
		return nil, &Error{Problems: sortProblems(l.problems)}
	}
	c.Warnings = l.warnings
	return &c, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: open %s: %w", path, err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(src) > maxFileSize {
		return nil, fmt.Errorf("config: %s is larger than %d bytes; is it the right file?", path, maxFileSize)
	}
	return src, nil
}

// Validate checks a Config built in code (such as Defaults() with changes in
// a test) with the same rules as Load, and fills the plugin ports left at 0
// with their defaults. Problems carry keys but no positions. Warnings are
// replaced by those found.
func (c *Config) Validate() error {
	l := newLoader("")
	l.structMode = true
	l.validate(c)
	if len(l.problems) > 0 {
		return &Error{Problems: sortProblems(l.problems)}
	}
	c.Warnings = l.warnings
	return nil
}
