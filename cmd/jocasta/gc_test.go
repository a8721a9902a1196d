package main

import (
	"math"
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

// TestTuneReplayGC: an offline replay also sets a soft memory limit, half
// the memory available, unless the environment configures the collector.
func TestTuneReplayGC(t *testing.T) {
	prevPct, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevPct); debug.SetMemoryLimit(prevLimit) })
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Cleanup(func() { os.Setenv(name, v) })
		}
		os.Unsetenv(name)
	}
	avail := memoryAvailable("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup")
	if avail <= 0 {
		t.Fatal("no memory size readable on this machine")
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := tuneReplayGC(); got != avail/2 || debug.SetMemoryLimit(-1) != avail/2 {
		t.Errorf("limit %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), avail/2)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "200")
	if got := tuneReplayGC(); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOGC set: limit %d (runtime %d), want none", got, debug.SetMemoryLimit(-1))
	}
}
