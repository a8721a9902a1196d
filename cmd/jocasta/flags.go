package main

import (
	"errors"
	"flag"
	"io"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// newFlags returns a flag set with the --config flag every command takes.
func newFlags(name string, config *string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(config, "config", "", "configuration file")
	return fs
}

// parse parses flags anywhere among the arguments and returns the
// positional ones. Flag mistakes are usage errors.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(cmd string, pos []string, n int, what string) error {
	if len(pos) != n {
		if n == 0 {
			return usagef("%s takes no arguments, got %q", cmd, pos)
		}
		return usagef("%s needs %s", cmd, what)
	}
	return nil
}

// parseTime accepts RFC 3339 (UTC assumed when no offset is given in the
// date-only form 2026-11-22).
func parseTime(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, usagef("--%s %q: want an RFC 3339 time such as 2026-11-22T10:00:00Z or a date 2026-11-22", flagName, v)
}

// durationFlag is a flag written as the configuration writes durations
// (config.ParseDuration: a whole number and one unit, 90s, 30m, 12h), and
// remembers whether it was given, so that 0s is a value, not "not given".
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return config.Duration(f.d).String()
}

func (f *durationFlag) Set(s string) error {
	d, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	f.d, f.set = d.D(), true
	return nil
}
