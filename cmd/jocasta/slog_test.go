package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestSlogBridge(t *testing.T) {
	var buf bytes.Buffer
	log := slogFor(zerolog.New(&buf).Level(zerolog.InfoLevel)).With("source", "sweep:h")
	log.Debug("hidden")
	log.WithGroup("net").Warn("run failed", "took", 1500*time.Millisecond, "hosts", 3, "err", errors.New("boom"), "ok", false)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	want := map[string]any{"level": "warn", "message": "run failed", "source": "sweep:h", "net.took": "1.5s", "net.hosts": float64(3), "net.err": "boom", "net.ok": false}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, buf.String())
		}
	}
	if bytes.Contains(buf.Bytes(), []byte("hidden")) {
		t.Error("a debug line passed an info logger")
	}
	_ = slog.LevelInfo
}
