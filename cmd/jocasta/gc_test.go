package main

import (
	"math"
	"os"
	"path/filepath"
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
	untunedGC(t)
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

// TestServeMemoryLimit: under a memory limit below the machine's, serve's
// soft limit leaves an eighth of it (at least 16 MiB, at most half) to
// the pages the kernel charges beside the heap; none without one.
func TestServeMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	machine := int64(2048 * mib)
	for _, tc := range []struct {
		name            string
		machine, cgroup int64
		want            int64
	}{
		{"no limit", machine, 0, 0},
		{"a limit above the machine's memory", machine, 4096 * mib, 0},
		{"the machine's memory exactly", machine, machine, 0},
		{"a limit, machine unknown", 0, 512 * mib, 448 * mib},
		{"a small container: 16 MiB kept", machine, 60 * mib, 44 * mib},
		{"a large one: an eighth kept", machine, 1024 * mib, 896 * mib},
		{"tiny: never below half", machine, 24 * mib, 12 * mib},
	} {
		if got := serveMemoryLimit(tc.machine, tc.cgroup); got != tc.want {
			t.Errorf("%s: %d MiB, want %d MiB", tc.name, got/mib, tc.want/mib)
		}
	}
}

// TestTuneServeGC: serve sets its soft memory limit from the cgroup's
// (a v1 memory controller here) with its GOGC, and leaves both alone when
// the environment sets either.
func TestTuneServeGC(t *testing.T) {
	untunedGC(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	meminfo := write("meminfo", "MemTotal:        2048000 kB\n")
	write("v1/memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("v1/memory/docker/abc/memory.limit_in_bytes", "62914560\n") // 60 MiB
	limited := write("cg-limited", "4:memory:/docker/abc\n")
	free := write("cg-free", "4:memory:/\n")
	root := filepath.Join(dir, "v1")

	debug.SetMemoryLimit(math.MaxInt64)
	if set, limit, cg := tuneServeGC(meminfo, limited, root); !set || limit != 44<<20 || cg != 60<<20 || debug.SetMemoryLimit(-1) != 44<<20 || debug.SetGCPercent(-1) != serveGCPercent {
		t.Errorf("in a 60 MiB cgroup: set %v, limit %d, cgroup %d; runtime limit %d", set, limit, cg, debug.SetMemoryLimit(-1))
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	if set, limit, _ := tuneServeGC(meminfo, free, root); !set || limit != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("without a limit: set %v, limit %d; runtime limit %d", set, limit, debug.SetMemoryLimit(-1))
	}
	debug.SetGCPercent(100)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if set, limit, _ := tuneServeGC(meminfo, limited, root); set || limit != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: set %v, limit %d; runtime limit %d", set, limit, debug.SetMemoryLimit(-1))
	}
}

// untunedGC clears GOGC and GOMEMLIMIT from the environment and restores
// them, and the collector's settings, when t ends.
func untunedGC(t *testing.T) {
	t.Helper()
	prevPct, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevPct); debug.SetMemoryLimit(prevLimit) })
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Cleanup(func() { os.Setenv(name, v) })
		}
		os.Unsetenv(name)
	}
}
