package bus

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/rs/zerolog"
)

// zlog adapts zerolog to watermill's LoggerAdapter so watermill's messages
// reach our log instead of being dropped.
type zlog struct {
	l zerolog.Logger
}

// NewLogger returns a watermill logger writing to l.
func NewLogger(l zerolog.Logger) watermill.LoggerAdapter {
	return zlog{l: l.With().Str("component", "watermill").Logger()}
}

func fields(e *zerolog.Event, f watermill.LogFields) *zerolog.Event {
	for k, v := range f {
		e = e.Interface(k, v)
	}
	return e
}

func (z zlog) Error(msg string, err error, f watermill.LogFields) {
	fields(z.l.Error().Err(err), f).Msg(msg)
}
func (z zlog) Info(msg string, f watermill.LogFields)  { fields(z.l.Debug(), f).Msg(msg) }
func (z zlog) Debug(msg string, f watermill.LogFields) { fields(z.l.Debug(), f).Msg(msg) }
func (z zlog) Trace(msg string, f watermill.LogFields) { fields(z.l.Trace(), f).Msg(msg) }
func (z zlog) With(f watermill.LogFields) watermill.LoggerAdapter {
	c := z.l.With()
	for k, v := range f {
		c = c.Interface(k, v)
	}
	return zlog{l: c.Logger()}
}
