package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
)

// benchEvents is the size of the replay benchmarks' log:
// JOCASTA_REPLAY_EVENTS, default 1,000,000.
func benchEvents(b *testing.B) int {
	if s := os.Getenv("JOCASTA_REPLAY_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("JOCASTA_REPLAY_EVENTS=%q", s)
		}
		return n
	}
	return 1_000_000
}

// buildLog writes n events: sweeps of a 1,000-device network, each
// reporting two devices (every device answers every 500 s, so it stays
// online), every 50th event a clock tick, every 1,000th sweep a device
// that moves to a new address and one never seen before.
func buildLog(b *testing.B, path string, n int) *store.Store {
	b.Helper()
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	const devices = 1000
	host := func(k int, moved bool) events.SweepHost {
		ip := fmt.Sprintf("10.0.%d.%d", k/250, k%250+1)
		if moved {
			ip = fmt.Sprintf("10.1.%d.%d", k/250%250, k%250+1)
		}
		return events.SweepHost{IP: ip, Network: "10.0.0.0/8", MAC: fmt.Sprintf("00:11:22:%02x:%02x:%02x", k>>16&0xff, k>>8&0xff, k&0xff),
			Via: "icmp", RTTMicros: 700, Names: events.NamesOf(map[string]string{"dns": fmt.Sprintf("host-%d.lab", k)})}
	}
	batch := make([]events.Envelope, 0, 1000)
	next := 0
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second)
		var e events.Envelope
		if i%50 == 49 {
			e = events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
			e.Source = "clock"
		} else {
			hosts := []events.SweepHost{host(next%devices, false), host((next+1)%devices, false)}
			next += 2
			if i%1000 == 0 {
				hosts = append(hosts, host(devices+i/1000, false), host(i/1000%devices, true))
			}
			e = events.MustNew(events.KindSweepCompleted, events.SweepCompleted{
				ScanID: strconv.Itoa(i), Started: at.Add(-time.Second), Finished: at, Networks: []string{"10.0.0.0/8"},
				ProbesSent: 2, Complete: true, Hosts: hosts,
			}, at)
			e.Source = "sweep:bench"
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := st.Append(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// A live log is durable (every append is fsynced); written with
	// NoSync here, it is synced now so that its writeback does not land
	// in the measured time.
	if err := st.DB().Sync(); err != nil {
		b.Fatal(err)
	}
	return st
}

// settle collects the garbage of building the log and returns its memory
// to the system, so that the runtime does not spend the measured time
// doing it (a replay runs in a fresh process).
func settle() {
	debug.FreeOSMemory()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplay1M is `jocasta replay`: copy a log of 1,000,000 events
// into a fresh file and rebuild the inventory from it. It reports events
// per second of wall time and per second of CPU time (the machine may be
// shared).
func BenchmarkReplay1M(b *testing.B) {
	// As an offline `jocasta replay` runs (cmd/jocasta replayGCPercent),
	// unless the environment sets the collector.
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if !gogc && !limit {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	n := benchEvents(b)
	dir := b.TempDir()
	src := buildLog(b, filepath.Join(dir, "src.db"), n)
	defer src.Close()
	settle()
	b.ResetTimer()
	var cpu time.Duration
	for k := 0; b.Loop(); k++ {
		c := cpuTime()
		out := filepath.Join(dir, fmt.Sprintf("out%d.db", k))
		var opts Options
		if os.Getenv("JOCASTA_REPLAY_LOG") != "" { // the time of each step
			opts.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		if err := Replay(context.Background(), src, out, time.Time{}, newViews(b).projs(), opts); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c
		b.StopTimer()
		_ = os.Remove(out)
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(n*b.N)/cpu.Seconds(), "events/cpu-s")
}

// BenchmarkRebuild1M is the rebuild at start after a version change: the
// runner applies 1,000,000 events from the log already in the file.
func BenchmarkRebuild1M(b *testing.B) {
	n := benchEvents(b)
	dir := b.TempDir()
	st := buildLog(b, filepath.Join(dir, "src.db"), n)
	defer st.Close()
	settle()
	defer profileRebuild(b)()
	b.ResetTimer()
	var cpu time.Duration
	mallocs := mallocCount()
	for k := 0; b.Loop(); k++ {
		c := cpuTime()
		inv := &versioned{Inventory: newInventory(b), v: k + 2}
		scans := &versionedScans{Log: scanlog.New(nil), v: k + 2}
		r, err := New(st, []Projection{inv, scans}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.CatchUp(context.Background()); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(n*b.N)/cpu.Seconds(), "events/cpu-s")
	// Unlike the times, the allocations per event do not move with the
	// machine's load: the figure to compare two versions by on a noisy
	// machine (each allocation costs the allocator and the collector).
	b.ReportMetric(float64(mallocCount()-mallocs)/float64(n*b.N), "allocs/event")
}

// mallocCount is the number of heap allocations so far.
func mallocCount() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// profileRebuild writes a CPU profile of the measured part alone (not
// of building the log) to JOCASTA_REPLAY_CPUPROFILE, when set; it
// returns the function that stops it.
func profileRebuild(b *testing.B) func() {
	if path := os.Getenv("JOCASTA_REPLAY_MEMPROFILE"); path != "" {
		// The allocations of the rebuild alone: sampled from here, written
		// at the end (go tool pprof -sample_index=alloc_objects).
		prev := runtime.MemProfileRate
		runtime.MemProfileRate = 4096
		return func() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			runtime.MemProfileRate = prev
		}
	}
	path := os.Getenv("JOCASTA_REPLAY_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// versioned overrides the inventory's version (forcing a rebuild).
type versioned struct {
	*inventory.Inventory
	v int
}

func (p *versioned) Version() int { return p.v }

// versionedScans does the same for the scan log.
type versionedScans struct {
	*scanlog.Log
	v int
}

func (p *versionedScans) Version() int { return p.v }

// BenchmarkRebuildFlowLog: a projection rebuilt from a log of 40 flow
// windows (166,667 packed rows each, 3.7 MB stored out of line: 10,000
// devices × 1,000 peers an hour) with 10 clock ticks after each, as at
// a start after a version change. It reports the highest heap the
// batches in flight held (live objects, sampled every 2 ms), which a
// batch's events decide: the projection keeps nothing of them.
func BenchmarkRebuildFlowLog(b *testing.B) {
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "flows.db"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for w := range 40 {
		at := t0.Add(time.Duration(w) * time.Minute)
		e := storetest.FlowWindow(b, w, 166667, at)
		evs := []events.Envelope{e}
		for k := range 10 {
			tick := at.Add(time.Duration(k+1) * time.Second)
			evs = append(evs, events.MustNew(events.KindClockTicked, events.ClockTicked{At: tick}, tick))
		}
		if _, err := st.Append(context.Background(), evs...); err != nil {
			b.Fatal(err)
		}
	}
	settle()
	var peak uint64
	for k := 0; b.Loop(); k++ {
		stop := sampleHeap(&peak)
		p := &counting{name: fmt.Sprint("flows", k), version: 1}
		r, err := New(st, []Projection{p}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.CatchUp(context.Background()); err != nil {
			b.Fatal(err)
		}
		stop()
		if p.applied != 440 {
			b.Fatalf("%d events applied, want 440", p.applied)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// sampleHeap keeps the highest bytes of live and unswept heap objects
// in *peak, read every 2 ms (runtime/metrics: no stop of the world),
// until stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-ended }
}
