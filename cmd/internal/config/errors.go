package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is returned (wrapped) by Find when the file named by --config
// or SVC_CONFIG does not exist.
var ErrNotFound = errors.New("config: file not found")

// Problem is one thing wrong with the configuration. Msg says both what is
// wrong and what to change; it never contains the value of a secret key.
type Problem struct {
	File   string // file name as given to Load; "" for a problem from the environment
	Line   int    // 1-based; 0 when unknown (environment, or a file that is not YAML at all)
	Column int    // 1-based; 0 when unknown
	Env    string // the SVC_ variable the problem comes from, if any
	Key    string // dotted key path ("scan.devices.rate", "networks[1]"); "" if none applies
	Msg    string
}

// String renders the problem on one line:
//
//	jocasta.yaml:12:9: scan.devices.rate: want a whole number from 1 to 1000000, got "fast"
//	SVC_SERVER__PORT: server.port: want a whole number from 1 to 65535, got "0"
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.Env != "":
		b.WriteString(p.Env)
	case p.File != "" && p.Line > 0 && p.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d", p.File, p.Line, p.Column)
	case p.File != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%d", p.File, p.Line)
	case p.File != "":
		b.WriteString(p.File)
	default:
		b.WriteString("config")
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is returned by Load and Validate when the configuration has
// problems. It holds all of them, in file order, then environment problems.
type Error struct {
	Problems []Problem
}

// Error renders one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
