package main

import (
	"io"
	"time"

	"github.com/rs/zerolog"
)

// newLogger builds the service logger: level debug, info, warn or error
// (anything else logs at info) and format json or text (anything but text
// writes JSON), as the contract says.
func newLogger(level, format string, w io.Writer) zerolog.Logger {
	lvl := zerolog.InfoLevel
	switch level {
	case "debug":
		lvl = zerolog.DebugLevel
	case "warn":
		lvl = zerolog.WarnLevel
	case "error":
		lvl = zerolog.ErrorLevel
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	if format == "text" {
		w = zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

func nopLogger() zerolog.Logger { return zerolog.Nop() }
