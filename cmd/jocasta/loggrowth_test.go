package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store"
)

// stableSweep is a sweep of 100 stable devices with names, some services
// and jittering round trips, as a real /24 of a home or small office.
func stableSweep(rng *rand.Rand, fin time.Time, n int) *sources.Sweep {
	pfx := netip.MustParsePrefix("10.20.0.0/24")
	s := &sources.Sweep{ScanID: fmt.Sprint(fin.Unix()), Started: fin.Add(-8 * time.Second), Finished: fin,
		Networks: []netip.Prefix{pfx}, ProbesSent: 508, Complete: true}
	for i := range n {
		h := &sources.Host{IP: netip.AddrFrom4([4]byte{10, 20, 0, byte(i + 2)}), Network: pfx, Via: sources.ViaICMP,
			MAC: net.HardwareAddr{0x00, 0x11, 0x22, 0x00, 0x00, byte(i)}, RTT: time.Duration(300+rng.IntN(2000)) * time.Microsecond}
		switch i % 4 {
		case 0:
			h.Names = map[string]string{"dns": fmt.Sprintf("host-%d.lab", i)}
		case 1:
			h.Names = map[string]string{"mdns": fmt.Sprintf("device-%d.local", i)}
			h.Services = []sources.Service{{Instance: fmt.Sprintf("Device %d", i), Type: "_http._tcp", Port: 80}}
		case 2:
			h.Names = map[string]string{"netbios": fmt.Sprintf("PC-%d", i)}
		}
		s.Hosts = append(s.Hosts, h)
	}
	return s
}

// dataInUse is the bytes of branch and leaf data in use in every bucket of
// the database file (what `bbolt stats` reports), nested buckets included.
func dataInUse(t testing.TB, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	total := 0
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			st := b.Stats()
			total += st.BranchInuse + st.LeafInuse + st.InlineBucketInuse
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// TestLogGrowthStableNetwork measures what a day of 5-minute sweeps of 100
// stable devices adds to the database, every bucket counted (the log and
// each projection), as bytes of data in use between two copies: after a
// first day (the network is learnt) and after a second one. The budget is
// 1 MB a day. Run with -v to see the figure (docs/performance.md);
// JOCASTA_GROWTH_KEEP=dir keeps the two copies there (day1.db, day2.db), for
// `bbolt stats`.
func TestLogGrowthStableNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a simulated day of sweeps")
	}
	dir := t.TempDir()
	keep := os.Getenv("JOCASTA_GROWTH_KEEP")
	cfg := config.Defaults()
	cfg.DB.Path = dir
	st, err := store.Open(filepath.Join(dir, "jocasta.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	set, err := newProjections(&cfg, nil, time.Now, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.New(st, set.list(), runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sink := ingest.NewSink(st)
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) {
		for i := range 288 {
			fin := t0.Add(time.Duration(d)*24*time.Hour + time.Duration(i)*5*time.Minute)
			sw := stableSweep(rng, fin, 100)
			if err := sink.Record(ctx, sources.Run{Instance: sources.Instance{Source: "sweep:lab", Kind: "sweep"}, Started: sw.Started, Finished: fin, Result: sw}); err != nil {
				t.Fatal(err)
			}
			if err := run.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	snapshot := func(name string) string {
		p := filepath.Join(dir, name)
		if keep != "" {
			if err := os.MkdirAll(keep, 0o700); err != nil {
				t.Fatal(err)
			}
			p = filepath.Join(keep, name)
			_ = os.Remove(p)
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteBackup(f, nil); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	day(0)
	first := dataInUse(t, snapshot("day1.db"))
	day(1)
	second := dataInUse(t, snapshot("day2.db"))
	st.Close()
	growth := second - first
	t.Logf("a day of 5-minute sweeps of 100 stable devices adds %d bytes of data in use (%.1f KiB; %d bytes per sweep)", growth, float64(growth)/1024, growth/288)
	if growth > 1<<20 {
		t.Errorf("a stable day grows the database by %d bytes, over the 1 MB budget", growth)
	}
}
