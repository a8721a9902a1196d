package inventory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/store"
	"golang.org/x/sys/unix"
)

// BenchmarkHistory90Days measures the history reads over a generated log
// of 90 days of 5-minute sweeps of 1,000 devices with churn (genHistory:
// phones leaving for work and dozing, laptops with a new address every
// day, renames, port scans, edits, watches, devices that go), the hourly
// retention purge keeping 90 days. Budgets (docs/performance.md): at= of
// one device p99 <= 50 ms, the whole list at an instant <= 500 ms, a diff
// of two instants 7 days apart <= 1 s, a replay of the whole log <= 60 s.
// JOCASTA_HISTORY_DAYS sets the log's length; JOCASTA_HISTORY_DB keeps
// (or reuses) the generated database at that path.
func BenchmarkHistory90Days(b *testing.B) {
	if testing.Short() {
		b.Skip("generates 90 days of sweeps of 1,000 devices")
	}
	days := 90
	if v, err := strconv.Atoi(os.Getenv("JOCASTA_HISTORY_DAYS")); err == nil && v >= 8 {
		days = v
	}
	ctx := context.Background()
	t0 := time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC) // a Monday
	path := os.Getenv("JOCASTA_HISTORY_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "history.db")
	}
	_, statErr := os.Stat(path)
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { st.Close() }() // st is opened again for the cold reads
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	end := t0.Add(time.Duration(days) * 24 * time.Hour)
	start := time.Now()
	if statErr == nil {
		run, err := runner.New(st, []runner.Projection{inv}, runner.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := run.CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("reused %s (%d events), loaded in %s", path, st.Head(), time.Since(start).Round(time.Millisecond))
	} else {
		end = genHistory(b, st, inv, t0, histLog{devices: 1000, days: days, keep: 90 * 24 * time.Hour})
		fi, _ := os.Stat(path)
		fmt.Fprintf(os.Stderr, "generated %d days, %d events in %s\n", days, st.Head(), time.Since(start).Round(time.Second))
		b.Logf("generated %d days, %d events in %s (%d MiB)", days, st.Head(), time.Since(start).Round(time.Second), fi.Size()>>20)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	instant := func() time.Time { return t0.Add(time.Duration(rng.Int64N(int64(end.Sub(t0))))) }
	ids := func() []string {
		ds, err := inv.DevicesAt(ctx, end)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]string, len(ds))
		for k, d := range ds {
			out[k] = d.ID
		}
		return out
	}()
	b.ResetTimer()
	for range b.N {
		// at= of one device: 2,000 random (device, instant) pairs.
		var one []time.Duration
		for range 2000 {
			id, at := ids[rng.IntN(len(ids))], instant()
			s := time.Now()
			if _, err := inv.DeviceAt(ctx, id, at); err != nil && !isNotFound(err) {
				b.Fatal(err)
			}
			one = append(one, time.Since(s))
		}
		slices.Sort(one)
		p99 := one[len(one)*99/100]
		b.ReportMetric(float64(p99.Microseconds())/1000, "ms-at-device-p99")

		// The whole list at 20 instants.
		var list time.Duration
		n := 0
		for range 20 {
			s := time.Now()
			ds, err := inv.DevicesAt(ctx, instant())
			if err != nil {
				b.Fatal(err)
			}
			list = max(list, time.Since(s))
			n += len(ds)
		}
		b.ReportMetric(float64(list.Microseconds())/1000, "ms-at-list-max")

		// Diffs of instants 7 days apart.
		var diff time.Duration
		changed := 0
		for range 10 {
			from := t0.Add(time.Duration(rng.Int64N(int64(end.Sub(t0) - 7*24*time.Hour))))
			s := time.Now()
			d, err := inv.Diff(ctx, from, from.Add(7*24*time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			diff = max(diff, time.Since(s))
			changed += len(d.Changed) + len(d.Added) + len(d.Removed)
		}
		b.ReportMetric(float64(diff.Microseconds())/1000, "ms-diff-7d-max")
		// Said now: the replay below takes a while.
		fmt.Fprintf(os.Stderr, "history reads: at= one device p99 %s (median %s); list at an instant max %s (%d devices on average); diff 7 days max %s (%d entries on average)\n",
			p99, one[len(one)/2], list, n/20, diff, changed/10)

		// Replay of the whole log (the projections that read sweeps: the
		// inventory with its history rows, and the scan log).
		out := filepath.Join(b.TempDir(), "replay.db")
		inv2, err := inventory.New(inventory.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, cpu := time.Now(), cpuTime()
		if err := runner.Replay(ctx, st, out, time.Time{}, []runner.Projection{inv2, scanlog.New(nil)}, runner.Options{}); err != nil {
			b.Fatal(err)
		}
		rep, repCPU := time.Since(s), cpuTime()-cpu
		b.ReportMetric(rep.Seconds(), "s-replay")
		b.ReportMetric(repCPU.Seconds(), "s-replay-cpu")
		_ = os.Remove(out)
		b.Logf("%d devices now; at= one device p99 %s (median %s); list at an instant max %s (%d devices on average); diff 7 days max %s (%d entries on average); replay of %d events %s (%s of CPU)",
			len(ids), p99, one[len(one)/2], list, n/20, diff, changed/10, st.Head(), rep.Round(time.Millisecond), repCPU.Round(time.Millisecond))

		// The same reads from a cold page cache, as after a start: the
		// store closed, the file's pages dropped from the cache, the
		// store and the inventory opened again (which reads the device
		// rows, not the history), then one read.
		var coldList, coldDiff time.Duration
		for k := range 6 {
			st.Close()
			dropCache(b, path)
			st, err = store.Open(path, store.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			inv, err = inventory.New(inventory.Options{})
			if err != nil {
				b.Fatal(err)
			}
			run, err := runner.New(st, []runner.Projection{inv}, runner.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := run.CatchUp(ctx); err != nil {
				b.Fatal(err)
			}
			s := time.Now()
			if k%2 == 0 {
				if _, err := inv.DevicesAt(ctx, instant()); err != nil {
					b.Fatal(err)
				}
				coldList = max(coldList, time.Since(s))
			} else {
				from := t0.Add(time.Duration(rng.Int64N(int64(end.Sub(t0) - 7*24*time.Hour))))
				if _, err := inv.Diff(ctx, from, from.Add(7*24*time.Hour)); err != nil {
					b.Fatal(err)
				}
				coldDiff = max(coldDiff, time.Since(s))
			}
		}
		b.ReportMetric(float64(coldList.Microseconds())/1000, "ms-at-list-cold-max")
		b.ReportMetric(float64(coldDiff.Microseconds())/1000, "ms-diff-7d-cold-max")
		fmt.Fprintf(os.Stderr, "cold page cache: list at an instant max %s, diff 7 days max %s (3 each)\n", coldList, coldDiff)
	}
}

// dropCache writes the file at path to disk and drops its pages from the
// page cache (posix_fadvise DONTNEED: pages no process maps), so that the
// next reads of it go to the disk.
func dropCache(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the CPU time (user and system) the process has used: on a
// loaded machine it says what a replay costs better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
