// Command jocasta-load seeds a database with a realistic inventory and puts
// HTTP load on a running jocasta from a separate process, reporting
// throughput and latency percentiles. It is a measuring tool for
// docs/performance.md, not part of the service.
//
//	jocasta-load seed --db FILE --devices 10000 --sweeps 3
//	jocasta-load http --url http://127.0.0.1:8080 --token-file F --concurrency 50 --sources 10 --duration 10s --path '/api/devices?limit=100'
//
// A path containing {id} is filled with the ids of the inventory's devices
// in turn. --token-file holds one token per line; clients use them in turn.
// --sources spreads the clients over that many loopback source addresses
// (127.0.0.1, 127.0.0.2, ...), as clients on that many hosts: the server
// limits requests per client address. Latencies run from sending a
// request to reading the last byte of its answer; when some answers are
// not 2xx (rate limits), the 2xx ones are also reported on their own.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
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
				h.Names = events.NamesOf(map[string]string{"dns": fmt.Sprintf("host-%d.lan", i), "mdns": fmt.Sprintf("host-%d.local", i)})
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
	sources := fs.Int("sources", 1, "loopback source addresses the clients are spread over (127.0.0.1, 127.0.0.2, ...), as clients on that many hosts; the server limits requests per client address")
	dur := fs.Duration("duration", 10*time.Second, "how long to load")
	path := fs.String("path", "/api/devices?limit=100", "request path; {id} is replaced by device ids")
	cpuProfile := fs.String("cpuprofile", "", "write the load tool's own CPU profile to this file")
	rate := fs.Float64("rate", 0, "requests per second offered on a fixed schedule (open loop; each latency counts from the moment its slot was handed out, so a server that falls behind shows it; the load tool's own lateness is reported apart); 0: every client sends its next request when the last is answered (closed loop, as fast as the server goes)")
	fs.Parse(args)
	if *sources < 1 || *sources > 250 {
		return errors.New("--sources must be 1 to 250")
	}
	if *rate < 0 {
		return errors.New("--rate must be 0 (closed loop) or a positive number of requests per second")
	}
	// The tool shares the CPUs with the server it measures: collect
	// less often, so that more of them go to the server.
	debug.SetGCPercent(400)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	b, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("read tokens: %w", err)
	}
	tokens := strings.Fields(string(b))
	if len(tokens) == 0 {
		return errors.New("no tokens in --token-file")
	}
	clients := make([]*http.Client, *sources)
	for k := range clients {
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		if *sources > 1 {
			dialer.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(k+1))}
		}
		clients[k] = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: dialer.DialContext, MaxIdleConnsPerHost: *conc * 2, MaxConnsPerHost: *conc * 2,
		}}
	}
	var ids []string
	if strings.Contains(*path, "{id}") {
		if ids, err = deviceIDs(ctx, clients[0], *base, tokens[0]); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration // of every answer
		okLat     []time.Duration // of 2xx answers
		errs      atomic.Int64
		statuses  sync.Map
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	begin := time.Now()
	// With --rate, one goroutine hands out the scheduled start times and
	// the clients take them: a late answer delays the requests behind
	// it, and their latencies count that wait.
	//
	// A latency counts from the moment the slot was handed out, not from
	// its planned time: the Go timer that wakes this goroutine fires up
	// to a millisecond late (epoll's timeout is in whole milliseconds),
	// later still when the CPUs are busy, and that lateness is the load
	// tool's, not the server's. It is reported on its own line. The
	// schedule keeps its rate (slot k is planned at begin + k×interval
	// whatever the lateness), and a slot that waits for a free client
	// counts that wait.
	type slot struct{ planned, offered time.Time }
	var schedule chan slot
	var lateness []time.Duration // offered − planned, per slot (one writer)
	if *rate > 0 {
		schedule = make(chan slot, 1<<16)
		lateness = make([]time.Duration, 0, int(*rate*dur.Seconds())+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(schedule)
			interval := time.Duration(float64(time.Second) / *rate)
			for k := int64(0); ; k++ {
				at := begin.Add(time.Duration(k) * interval)
				if d := time.Until(at); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				now := time.Now()
				select {
				case schedule <- slot{at, now}:
					lateness = append(lateness, now.Sub(at))
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for c := 0; c < *conc; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			tok := tokens[c%len(tokens)]
			client := clients[c%len(clients)]
			buf := make([]byte, 64<<10) // read bodies in few calls
			var local, localOK []time.Duration
			for ctx.Err() == nil {
				var scheduled time.Time
				if schedule != nil {
					sl, ok := <-schedule
					if !ok {
						break
					}
					scheduled = sl.offered
				}
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
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
				if !scheduled.IsZero() {
					t0 = scheduled
				}
				d := time.Since(t0)
				local = append(local, d)
				if resp.StatusCode/100 == 2 {
					localOK = append(localOK, d)
				}
				v, _ := statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			mu.Lock()
			latencies = append(latencies, local...)
			okLat = append(okLat, localOK...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(begin)
	pct := func(l []time.Duration, p float64) time.Duration {
		if len(l) == 0 {
			return 0
		}
		return l[int(float64(len(l)-1)*p)]
	}
	for _, l := range [][]time.Duration{latencies, okLat} {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	mode := "closed loop"
	if *rate > 0 {
		mode = fmt.Sprintf("open loop at %.0f/s offered", *rate)
	}
	fmt.Printf("path %s  clients %d  sources %d  tokens %d  duration %s  %s\n", *path, *conc, *sources, len(tokens), elapsed.Round(time.Millisecond), mode)
	fmt.Printf("requests %d  rps %.0f  errors %d\n", len(latencies), float64(len(latencies))/elapsed.Seconds(), errs.Load())
	fmt.Printf("latency p50 %s  p90 %s  p99 %s  max %s\n", pct(latencies, .50), pct(latencies, .90), pct(latencies, .99), pct(latencies, 1))
	if lateness != nil {
		slices.Sort(lateness)
		fmt.Printf("load tool lateness (slot offered after its planned time, not counted above) p50 %s  p99 %s  max %s\n",
			pct(lateness, .50), pct(lateness, .99), pct(lateness, 1))
	}
	if len(okLat) != len(latencies) {
		fmt.Printf("2xx only: requests %d  rps %.0f  p50 %s  p90 %s  p99 %s  max %s\n", len(okLat), float64(len(okLat))/elapsed.Seconds(),
			pct(okLat, .50), pct(okLat, .90), pct(okLat, .99), pct(okLat, 1))
	}
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
