package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/rs/zerolog"
)

// slogFor bridges the *slog.Logger that sources and projections take to
// the service's zerolog logger: one line per record, its attributes as
// fields (durations as text with their unit), at the same level filter.
func slogFor(log zerolog.Logger) *slog.Logger { return slog.New(&zerologHandler{log: log}) }

type zerologHandler struct {
	log    zerolog.Logger
	attrs  []slog.Attr
	prefix string // groups, "a.b."
}

func zeroLevel(l slog.Level) zerolog.Level {
	switch {
	case l < slog.LevelInfo:
		return zerolog.DebugLevel
	case l < slog.LevelWarn:
		return zerolog.InfoLevel
	case l < slog.LevelError:
		return zerolog.WarnLevel
	default:
		return zerolog.ErrorLevel
	}
}

func (h *zerologHandler) Enabled(_ context.Context, l slog.Level) bool {
	return zeroLevel(l) >= h.log.GetLevel()
}

func (h *zerologHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.WithLevel(zeroLevel(r.Level))
	for _, a := range h.attrs {
		addAttr(ev, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addAttr(ev, h.prefix, a)
		return true
	})
	ev.Msg(r.Message)
	return nil
}

func (h *zerologHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), prefixed(h.prefix, as)...)
	return &c
}

func (h *zerologHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

func prefixed(prefix string, as []slog.Attr) []slog.Attr {
	if prefix == "" {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

func addAttr(ev *zerolog.Event, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	key := prefix + a.Key
	switch v.Kind() {
	case slog.KindString:
		ev.Str(key, v.String())
	case slog.KindInt64:
		ev.Int64(key, v.Int64())
	case slog.KindUint64:
		ev.Uint64(key, v.Uint64())
	case slog.KindFloat64:
		ev.Float64(key, v.Float64())
	case slog.KindBool:
		ev.Bool(key, v.Bool())
	case slog.KindDuration:
		ev.Str(key, v.Duration().String())
	case slog.KindTime:
		ev.Time(key, v.Time())
	case slog.KindGroup:
		for _, g := range v.Group() {
			addAttr(ev, key+".", g)
		}
	default:
		if err, ok := v.Any().(error); ok {
			ev.Str(key, err.Error())
			return
		}
		ev.Str(key, strings.TrimSpace(v.String()))
	}
}
