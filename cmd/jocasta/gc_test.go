package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneGC: serve and replay set their GOGC only when the environment
// configures neither GOGC nor GOMEMLIMIT.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	unset := func(t *testing.T, name string) {
		t.Helper()
		if v, ok := os.LookupEnv(name); ok {
			t.Cleanup(func() { os.Setenv(name, v) })
		}
		os.Unsetenv(name)
	}
	tests := []struct {
		name    string
		percent int
		env     map[string]string
		want    int
	}{
		{"serve, neither set", serveGCPercent, nil, serveGCPercent},
		{"replay, neither set", replayGCPercent, nil, replayGCPercent},
		{"serve, GOGC set", serveGCPercent, map[string]string{"GOGC": "200"}, 100},
		{"replay, GOGC off", replayGCPercent, map[string]string{"GOGC": "off"}, 100},
		{"serve, GOMEMLIMIT set", serveGCPercent, map[string]string{"GOMEMLIMIT": "1GiB"}, 100},
		{"replay, GOMEMLIMIT set", replayGCPercent, map[string]string{"GOMEMLIMIT": "1GiB"}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unset(t, "GOGC")
			unset(t, "GOMEMLIMIT")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			debug.SetGCPercent(100)
			set := tuneGC(tc.percent)
			if got := debug.SetGCPercent(100); got != tc.want || set != (tc.want == tc.percent) {
				t.Errorf("GOGC %d (set %v), want %d", got, set, tc.want)
			}
		})
	}
}
