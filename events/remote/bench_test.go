package remote

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store/storetest"
)

// benchSize reads a positive integer from the environment, or def.
func benchSize(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive integer", name, v)
		}
		return n
	}
	return def
}

// benchSweep is one sensor's sweep of n hosts on its own /16: the same
// hosts every round (a stable site), each answering with a new round
// trip, and one host in a hundred with a new MAC each round.
func benchSweep(sensor, round, n int) *sources.Sweep {
	start := time.Now()
	sw := &sources.Sweep{ScanID: fmt.Sprintf("b%d-%d", sensor, round), Started: start.Add(-time.Second), Finished: start, Complete: true,
		Networks: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", sensor%250))}, ProbesSent: n}
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, byte(sensor % 250), byte(i / 250), byte(i%250 + 1)})
		mac := net.HardwareAddr{0x02, byte(sensor), byte(i >> 8), byte(i), 0, 0}
		if i%100 == 0 {
			mac[5] = byte(round)
		}
		sw.Hosts = append(sw.Hosts, &sources.Host{IP: ip, Network: sw.Networks[0], MAC: mac, Via: sources.ViaARP,
			RTT: time.Duration(200+(i*7+round*13)%900) * time.Microsecond})
	}
	return sw
}

// BenchmarkCentralIngest measures the whole path of remote sites, over
// real sockets and the real store (fsync on every commit): each of S
// sensors (JOCASTA_BENCH_SENSORS, default 50) stores a sweep of D hosts
// (JOCASTA_BENCH_DEVICES, default 1,000) in its outbox and publishes it
// to the embedded NATS server; the central consumes, writes each sweep
// against the source's previous one and appends it. One iteration is one
// round (every sensor's sweep appended, and applied by the inventory
// projection, as in serve), the "every minute". Reported: the
// round's time (s/round, to the inventory; commit-s/round, to the last
// commit; the budget is 60 s), the delay from the sensor's publish to the
// central's commit (p50, p99, max), and the log bytes per sweep (whole:
// the first round's; payload and file: the next rounds', by difference).
func BenchmarkCentralIngest(b *testing.B) {
	nSensors := benchSize(b, "JOCASTA_BENCH_SENSORS", 50)
	nDevices := benchSize(b, "JOCASTA_BENCH_DEVICES", 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.Nop()
	srv, err := StartEmbedded(EmbeddedOptions{Listen: "127.0.0.1:0", User: "s", Password: "pw", StoreDir: filepath.Join(b.TempDir(), "nats"), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	st := storetest.Open(b)
	// The central's inventory applies what it appends, as in serve.
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	run, err := runner.New(st, []runner.Projection{inv}, runner.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st.OnCommit(func(uint64) { run.Notify() })
	names := make([]string, nSensors)
	for i := range names {
		names[i] = fmt.Sprintf("site-%03d", i)
	}
	var mu sync.Mutex
	var delays []time.Duration
	appended := 0
	roundDone := make(chan struct{}, 1)
	central := NewCentral(st, CentralOptions{Allowed: names, Log: log, Observe: func(o Outcome) {
		if o.Result != "appended" {
			b.Errorf("a message was %s", o.Result)
			return
		}
		mu.Lock()
		delays = append(delays, o.Delay)
		appended++
		done := appended%nSensors == 0
		mu.Unlock()
		if done {
			roundDone <- struct{}{}
		}
	}})
	if err := central.Init(ctx); err != nil {
		b.Fatal(err)
	}
	cnc, err := srv.Conn("central", log)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		if err := central.Run(ctx, cnc); err != nil {
			b.Error(err)
		}
	})
	wg.Go(func() {
		if err := run.Run(ctx); err != nil && ctx.Err() == nil {
			b.Error(err)
		}
	})

	url := "nats://" + srv.Addr().String()
	sensors := make([]*Sensor, nSensors)
	for i := range sensors {
		ob, err := OpenOutbox(filepath.Join(b.TempDir(), "outbox.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer ob.Close()
		nc, err := Connect(ClientOptions{URL: url, User: "s", Password: "pw", Name: names[i]}, log)
		if err != nil {
			b.Fatal(err)
		}
		pub, err := NewPublisher(nc, log)
		if err != nil {
			b.Fatal(err)
		}
		defer pub.Close()
		sensors[i] = &Sensor{Name: names[i], Interval: time.Minute, Outbox: ob, Publisher: pub, Log: log}
		wg.Go(func() { sensors[i].Run(ctx) })
	}
	var committed time.Duration // the rounds' time to the last commit
	round := func(r int) {
		start := time.Now()
		var rg sync.WaitGroup
		for i, s := range sensors {
			rg.Go(func() {
				sw := benchSweep(i, r, nDevices)
				run := sources.Run{Instance: sources.Instance{Source: "sweep:" + s.Name, Kind: "sweep"}, Started: sw.Started, Finished: sw.Finished, Result: sw}
				if err := s.Record(ctx, run); err != nil {
					b.Error(err)
				}
			})
		}
		rg.Wait()
		select {
		case <-roundDone:
		case <-time.After(5 * time.Minute):
			b.Fatalf("round %d: not every sweep reached the central within 5 minutes", r)
		}
		committed += time.Since(start)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := run.WaitFor(wctx, st.Head()); err != nil {
			b.Fatalf("round %d: the inventory did not apply it: %v", r, err)
		}
	}
	// The first round is written whole (no base yet): not measured.
	round(0)
	committed = 0
	fi0, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	head0 := st.Head()
	whole := 0
	if err := st.Scan(ctx, 1, func(e events.Envelope) error { whole += len(e.Payload); return nil }); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	delays = delays[:0]
	mu.Unlock()
	b.ResetTimer()
	for r := range b.N {
		round(r + 1)
	}
	b.StopTimer()
	fi1, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(delays)
	q := func(p float64) float64 { return delays[int(p*float64(len(delays)-1))].Seconds() * 1000 }
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/round")
	b.ReportMetric(committed.Seconds()/float64(b.N), "commit-s/round")
	b.ReportMetric(float64(nSensors*nDevices*b.N)/b.Elapsed().Seconds(), "hosts/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	payload, n := 0, 0
	if err := st.Scan(ctx, head0+1, func(e events.Envelope) error {
		payload += len(e.Payload)
		n++
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if n > 0 {
		b.ReportMetric(float64(whole)/float64(head0), "whole-B/sweep")
		b.ReportMetric(float64(payload)/float64(n), "payload-B/sweep")
		b.ReportMetric(float64(fi1.Size()-fi0.Size())/float64(n), "file-B/sweep")
	}
}
