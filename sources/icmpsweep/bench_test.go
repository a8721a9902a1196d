package icmpsweep

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources/lab"
)

// BenchmarkSweepFake measures the sweep engine alone (fake socket, no
// replies, no pacing): time and allocations per address of a /16.
func BenchmarkSweepFake(b *testing.B) {
	f := newFake(ModeDatagram, false)
	f.discard = true
	prefixes := mustPrefixes("10.20.0.0/16")
	p := Params{Rate: 1e9, Rounds: 1}
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		ts, _, err := plan(prefixes, p)
		if err != nil {
			b.Fatal(err)
		}
		s, err := newSweep(ts, p, f, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms1)
	perSweep := float64(b.N) * 65534
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perSweep, "ns/addr")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/perSweep, "B/addr")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/perSweep, "allocs/addr")
}

// routedSlash16 builds two namespaces: a scanner, and a router at the
// other end of a veth pair that owns a few addresses of 10.99.0.0/16 (on
// its loopback) and drops the rest (forwarding off). The scanner routes
// the /16 through the router, so a sweep leaves through a real interface
// without resolving 65534 neighbours.
func routedSlash16(b *testing.B, responders int) (scannerNS string, prefix netip.Prefix) {
	b.Helper()
	scanner, router := lab.NewNamespace(b), lab.NewNamespace(b)
	if err := lab.IP(scanner,
		"link add r0 type veth peer name s0 netns "+router,
		"addr add 10.98.0.1/30 dev r0",
		"link set r0 up",
		"route add 10.99.0.0/16 via 10.98.0.2"); err != nil {
		b.Fatal(err)
	}
	cmds := []string{"addr add 10.98.0.2/30 dev s0", "link set s0 up"}
	for i := range responders {
		cmds = append(cmds, fmt.Sprintf("addr add 10.99.%d.%d/32 dev lo", (i*37)%256, 1+(i*91)%254))
	}
	if err := lab.IP(router, cmds...); err != nil {
		b.Fatal(err)
	}
	for _, ns := range []string{scanner, router} {
		if err := lab.Sysctl(ns, "net.ipv4.ping_group_range", "0 2147483647"); err != nil {
			b.Fatal(err)
		}
	}
	// No ICMP errors back for the silent addresses.
	if err := lab.Sysctl(router, "net.ipv4.icmp_ratelimit", "100000"); err != nil {
		b.Fatal(err)
	}
	return scanner, netip.MustParsePrefix("10.99.0.0/16")
}

func rusage(b *testing.B) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// BenchmarkSweepSlash16 sweeps a routed /16 (16 responders) at 20,000
// probes/s, 1 round, 1s wait, through a real ICMP socket, and reports the
// process CPU time and peak RSS per sweep. Needs root.
//
//	go test -run '^$' -bench SweepSlash16 -benchtime 2x ./sources/icmpsweep/
func BenchmarkSweepSlash16(b *testing.B) {
	if testing.Short() {
		b.Skip("SKIPPING: -short")
	}
	for _, mode := range []Mode{ModeDatagram, ModeRaw} {
		b.Run(string(mode), func(b *testing.B) {
			ns, prefix := routedSlash16(b, 16)
			var p *Pinger
			if err := lab.DoInNamespace(filepath.Join("/run/netns", ns), func() (err error) {
				p, err = Open(Options{Mode: mode})
				return err
			}); err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			params := Params{Rate: 20000, Rounds: 1, Wait: time.Second}
			runtime.GC()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			ru0 := rusage(b)
			var res Result
			for b.Loop() {
				var err error
				res, err = p.Sweep(context.Background(), []netip.Prefix{prefix}, params)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Responders) != 16 || res.ProbesSent != 65534 {
					b.Fatalf("%d responders, %d probes", len(res.Responders), res.ProbesSent)
				}
			}
			ru1 := rusage(b)
			runtime.ReadMemStats(&ms1)
			n := float64(b.N)
			cpu := tv(ru1.Utime) - tv(ru0.Utime) + tv(ru1.Stime) - tv(ru0.Stime)
			b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms/sweep")
			b.ReportMetric(float64(tv(ru1.Utime)-tv(ru0.Utime))/float64(time.Millisecond)/n, "user-ms/sweep")
			b.ReportMetric(float64(ru1.Maxrss)/1024, "maxrss-MiB")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n/65534, "B/addr")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n/65534, "allocs/addr")
			b.ReportMetric(res.Finished.Sub(res.Started).Seconds(), "s/sweep")
			b.ReportMetric(Estimate(65534, params).Seconds(), "bound-s")
		})
	}
}
