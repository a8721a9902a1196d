// Command jocasta-load seeds a database with a realistic inventory and puts
// HTTP load on a running jocasta from a separate process, reporting
// throughput and latency percentiles. It is a measuring tool for
// docs/performance.md, not part of the service.
//
//	jocasta-load seed --db FILE --devices 10000 --sweeps 3
//	jocasta-load http --url http://127.0.0.1:8080 --token-file F --concurrency 50 --duration 10s --path '/api/devices?limit=100'
//
// A path containing {id} is filled with the ids of the inventory's devices
// in turn. --token-file holds one token per line; clients use them in turn.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: jocasta-load seed|http [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "seed":
		err = seed(ctx, os.Args[2:])
	case "http":
		err = load(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jocasta-load:", err)
		os.Exit(1)
	}
}

// seed appends sweeps in which `devices` hosts answer, spread over /24s of
// 10.0.0.0/8, a tenth of them with names from two resolvers.
func seed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	db := fs.String("db", "", "database file to create or extend")
	n := fs.Int("devices", 10000, "devices per sweep")
	sweeps := fs.Int("sweeps", 3, "sweeps to append")
	fs.Parse(args)
	if *db == "" {
		return errors.New("seed needs --db")
	}
	st, err := store.Open(*db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now().UTC().Add(-time.Duration(*sweeps) * 5 * time.Minute)
	var nets []string
	for i := 0; i < (*n+253)/254; i++ {
		nets = append(nets, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
	}
	for s := 0; s < *sweeps; s++ {
		at := start.Add(time.Duration(s) * 5 * time.Minute)
		p := events.SweepCompleted{ScanID: fmt.Sprintf("seed-%d", s), Started: at.Add(-10 * time.Second), Finished: at,
			Networks: nets, ProbesSent: len(nets) * 254 * 2, Complete: true}
		for i := 0; i < *n; i++ {
			net := i / 254
			h := events.SweepHost{
				IP:        fmt.Sprintf("10.%d.%d.%d", net/256, net%256, i%254+1),
				Network:   nets[net],
				MAC:       fmt.Sprintf("00:1b:63:%02x:%02x:%02x", (i>>16)&0xff, (i>>8)&0xff, i&0xff),
				RTTMicros: int64(300 + i%700),
				Via:       "icmp",
			}
			if i%10 == 0 {
				h.Names = map[string]string{"dns": fmt.Sprintf("host-%d.lan", i), "mdns": fmt.Sprintf("host-%d.local", i)}
			}
			p.Hosts = append(p.Hosts, h)
		}
		e, err := events.New(events.KindSweepCompleted, p, at)
		if err != nil {
			return err
		}
		e.Source, e.Actor = "sweep:seed", "sweep:seed"
		if _, err := st.Append(ctx, e); err != nil {
			return err
		}
	}
	fmt.Printf("seeded %d sweeps of %d devices into %s (head %d)\n", *sweeps, *n, *db, st.Head())
	return nil
}

func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "base URL")
	tokenFile := fs.String("token-file", "", "file with one API token per line")
	conc := fs.Int("concurrency", 50, "concurrent clients")
	dur := fs.Duration("duration", 10*time.Second, "how long to load")
	path := fs.String("path", "/api/devices?limit=100", "request path; {id} is replaced by device ids")
	fs.Parse(args)
	b, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("read tokens: %w", err)
	}
	tokens := strings.Fields(string(b))
	if len(tokens) == 0 {
		return errors.New("no tokens in --token-file")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc * 2, MaxConnsPerHost: *conc * 2}, Timeout: 10 * time.Second}
	var ids []string
	if strings.Contains(*path, "{id}") {
		if ids, err = deviceIDs(ctx, client, *base, tokens[0]); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		statuses  sync.Map
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	begin := time.Now()
	for c := 0; c < *conc; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			tok := tokens[c%len(tokens)]
			var local []time.Duration
			for ctx.Err() == nil {
				p := *path
				if ids != nil {
					p = strings.ReplaceAll(p, "{id}", ids[int(next.Add(1))%len(ids)])
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, *base+p, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				v, _ := statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(begin)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	fmt.Printf("path %s  clients %d  tokens %d  duration %s\n", *path, *conc, len(tokens), elapsed.Round(time.Millisecond))
	fmt.Printf("requests %d  rps %.0f  errors %d\n", len(latencies), float64(len(latencies))/elapsed.Seconds(), errs.Load())
	fmt.Printf("latency p50 %s  p90 %s  p99 %s  max %s\n", pct(.50), pct(.90), pct(.99), pct(1))
	statuses.Range(func(k, v any) bool {
		fmt.Printf("status %d: %d\n", k, v.(*atomic.Int64).Load())
		return true
	})
	return nil
}

func deviceIDs(ctx context.Context, c *http.Client, base, token string) ([]string, error) {
	var ids []string
	cursor := ""
	for {
		u := base + "/api/devices?limit=1000"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list devices: %w", err)
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(ids) == 0 {
		return nil, errors.New("the inventory has no devices")
	}
	return ids, nil
}
