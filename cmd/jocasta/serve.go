package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events/bus"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/devicesweep"
	"github.com/jocasta/jocasta/sources/portscan"
	"github.com/jocasta/jocasta/sources/resolve/dnssd"
	"github.com/jocasta/jocasta/sources/resolve/mdns"
	"github.com/jocasta/jocasta/sources/resolve/netbios"
	"github.com/jocasta/jocasta/sources/resolve/rdns"
	"github.com/jocasta/jocasta/sources/resolve/ssdp"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// stopBudget is how long a stop may take in all; SIGTERM must exit within
// 5 seconds.
const stopBudget = 4 * time.Second

func cmdServe(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("serve", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("serve", pos, 0, ""); err != nil {
		return err
	}
	cfg, path, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Logger.Level, cfg.Logger.Format, e.stderr)
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if w := configModeWarning(path); w != "" {
		log.Warn().Msg(w)
	}
	if path == "" {
		path = "(none: defaults and SVC_ variables)"
	}
	log.Info().Str("version", version).Str("config", path).Str("db", cfg.DBFile()).Msg("jocasta starting")
	if tuneGC(serveGCPercent) {
		log.Info().Int("gogc", serveGCPercent).Msg("collector target set (GOGC and GOMEMLIMIT are unset)")
	}
	return serve(e.ctx, cfg, log, nil)
}

// serveGCPercent is the collector's target serve runs with: the heap may
// grow to 1.75 times what is live instead of twice. serve's live heap is
// mostly long-lived state (the inventory, about 2 KB per device) and a
// request leaves little garbage (about 3 KB), so collecting a little more
// often costs little: the collector's CPU share is proportional to the
// allocation rate over GOGC whatever the inventory's size (about 4% at
// 25,000 requests per second with GOGC=100, so about 5% with 75), while
// the peak heap, and the RSS, shrinks by an eighth. Unlike a fixed
// memory limit it scales with the inventory, so a large one never makes
// the collector run without pause. See docs/performance.md.
const serveGCPercent = 75

// replayGCPercent is the collector's target of an offline `jocasta
// replay`: a one-shot batch whose live heap is the inventory being built
// and a few batches of events, so letting the heap grow to five times
// that costs little memory and makes the replay about a third faster
// (see docs/performance.md). A replay that a running serve does keeps
// serve's target.
const replayGCPercent = 400

// tuneGC sets the collector's target to percent unless the environment
// configures the collector (the runtime read GOGC and GOMEMLIMIT when the
// process started, so the process environment is what counts). It
// reports whether it set it.
func tuneGC(percent int) bool {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if gogc || limit {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}

// serveHooks lets in-process tests listen on 127.0.0.1:0 and learn the
// bound address.
type serveHooks struct {
	addr       string
	purgeDelay time.Duration
	// verifyFirst is when the first background verify runs (default a
	// minute after start, once start-up work has settled).
	verifyFirst time.Duration
	listening   func(addr net.Addr)
}

// serve runs the service until ctx is done, then stops within stopBudget.
func serve(ctx context.Context, cfg *config.Config, log zerolog.Logger, hooks *serveHooks) error {
	st, err := openServeStore(cfg)
	if err != nil {
		return err
	}
	for _, w := range notRunYet(cfg) {
		log.Warn().Msg(w)
	}
	now := time.Now
	vendors := loadVendors(log)
	set, err := newProjections(cfg, vendors, now)
	if err != nil {
		st.Close()
		return err
	}
	doorbell := bus.New(log)
	st.OnCommit(doorbell.Ring)
	run, err := runner.New(st, set.list(), runner.Options{Logf: logf(log.With().Str("component", "runner").Logger())})
	if err != nil {
		st.Close()
		return err
	}
	c := &core{st: st, run: run, access: set.access, inv: set.inv, now: now, sync: run.WaitFor}
	c.health = &health{caughtUp: run, st: st}
	rlog := log.With().Str("component", "replay").Logger()
	c.progress = func(format string, args ...any) { rlog.Info().Msgf(format, args...) }
	c.projs = func() []runner.Projection {
		fresh, _ := newProjections(cfg, vendors, now)
		return fresh.list()
	}

	api, err := c.api(cfg, log)
	if err != nil {
		st.Close()
		return err
	}
	addr := net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	if hooks != nil && hooks.addr != "" {
		addr = hooks.addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		st.Close()
		return fmt.Errorf("listen on %s (server.host, server.port): %w", addr, err)
	}
	control, err := listenControl(cfg.SocketPath(), dbFileAbs(cfg), c, log)
	if err != nil {
		ln.Close()
		st.Close()
		return err
	}
	httpSrv, capped := httpapi.NewServer(ctx, api, ln, httpapi.ServerLimits{}, log.With().Str("component", "http").Logger())

	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	g, gctx := errgroup.WithContext(work)

	bell, err := doorbell.Subscribe(gctx, "serve")
	if err != nil {
		return err
	}
	clock := inventory.NewClock(st, set.inv, now)
	g.Go(func() error { return run.Run(gctx) })
	g.Go(func() error {
		for range bell {
			run.Notify()
			clock.Poke()
		}
		return nil
	})
	g.Go(func() error { return clock.Run(gctx) })
	g.Go(func() error { return watchStore(gctx, st, log) })
	verifyFirst := time.Minute
	if hooks != nil && hooks.verifyFirst > 0 {
		verifyFirst = hooks.verifyFirst
	}
	g.Go(func() error {
		return c.health.runVerify(gctx, log.With().Str("component", "verify").Logger(), verifyFirst, verifyEvery)
	})
	purger, err := inventory.NewPurger(st, set.inv, run, inventory.RetentionOptions{
		History: time.Duration(cfg.Retention.History),
		Traffic: time.Duration(cfg.Retention.Traffic),
		DNS:     time.Duration(cfg.Retention.DNS),
		Devices: time.Duration(cfg.Retention.Devices),
	}, now)
	if err != nil {
		return err
	}
	purger.Logf = logf(log.With().Str("component", "retention").Logger())
	if hooks != nil && hooks.purgeDelay > 0 {
		purger.FirstDelay = hooks.purgeDelay
	}
	clock.Logf = logf(log.With().Str("component", "clock").Logger())
	g.Go(func() error { return purger.Run(gctx) })
	g.Go(func() error { return set.access.RunFlusher(gctx, st.DB(), time.Minute) })
	err = startSweeps(gctx, g, cfg, st, log)
	if err == nil {
		headAtStart := st.Head()
		err = startPortScans(gctx, g, cfg, st, set.inv, func(ctx context.Context) error { return run.WaitFor(ctx, headAtStart) }, log)
	}
	if err != nil {
		ln.Close()
		control.Shutdown(context.Background())
		stopWork()
		g.Wait()
		st.Close()
		return err
	}
	g.Go(func() error {
		if hooks != nil && hooks.listening != nil {
			hooks.listening(ln.Addr())
		}
		log.Info().Str("addr", ln.Addr().String()).Msg("serving the API")
		if err := httpSrv.Serve(capped); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http: %w", err)
		}
		return nil
	})
	g.Go(control.Serve)
	// The stopper: when the context ends (signal) or any part fails, shut
	// everything down within the budget.
	g.Go(func() error {
		<-gctx.Done()
		log.Info().Msg("stopping")
		sctx, cancel := context.WithTimeout(context.Background(), stopBudget-time.Second)
		defer cancel()
		if err := httpSrv.Shutdown(sctx); err != nil {
			httpSrv.Close()
		}
		control.Shutdown(sctx)
		return nil
	})
	err = g.Wait()
	doorbell.Close()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stopped with an error")
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// startSweeps starts the interval device sweep when enabled.
func startSweeps(ctx context.Context, g *errgroup.Group, cfg *config.Config, st ingest.Appender, log zerolog.Logger) error {
	d := cfg.Scan.Devices
	if !d.Enabled {
		log.Info().Msg("interval sweeps are off (scan.devices.enabled: false)")
		return nil
	}
	if len(cfg.Networks) == 0 {
		log.Warn().Msg("no networks to sweep: list CIDR prefixes under networks (jocasta init finds this host's)")
		return nil
	}
	host, _ := os.Hostname()
	source := cfg.ScanSource(host)
	slog := log.With().Str("source", source).Logger()
	var enrichers []sources.Enricher
	if d.ResolveNames {
		enrichers = append(enrichers, rdns.New(rdns.Options{}))
	}
	if d.ResolveMDNS {
		enrichers = append(enrichers, mdns.New(mdns.Options{}))
	}
	if d.ResolveNetBIOS {
		enrichers = append(enrichers, netbios.New(netbios.Options{}))
	}
	if d.ResolveDNSSD {
		enrichers = append(enrichers, dnssd.New(dnssd.Options{}))
	}
	if d.ResolveSSDP {
		enrichers = append(enrichers, ssdp.New(ssdp.Options{}))
	}
	sw, err := devicesweep.New(devicesweep.Config{
		Networks:    cfg.Networks,
		Rate:        d.Rate,
		Rounds:      d.Rounds,
		Wait:        time.Duration(d.Wait),
		ResolveMACs: d.ResolveMACs,
		Enrichers:   enrichers,
		Logf:        func(f string, a ...any) { slog.Warn().Msgf(f, a...) },
		Infof:       func(f string, a ...any) { slog.Info().Msgf(f, a...) },
	})
	if err != nil {
		return err
	}
	if err := sw.Check(); err != nil {
		return err
	}
	in := ingest.New(st, source)
	sched := &devicesweep.Scheduler{Name: "sweep", Logf: func(f string, a ...any) { slog.Info().Msgf(f, a...) }}
	interval := time.Duration(d.Interval)
	g.Go(func() error {
		return sched.RunEvery(ctx, interval, interval/20, func(ctx context.Context) error {
			slog.Info().Int("networks", len(cfg.Networks)).Msg("sweep started")
			res, err := sw.Run(ctx)
			if res == nil {
				return err
			}
			// The result is recorded even when the sweep was cut short
			// (as incomplete); a stop lets this append finish.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			seq, aerr := in.Sweep(actx, res)
			if aerr != nil {
				return errors.Join(err, aerr)
			}
			slog.Info().Uint64("seq", seq).Int("hosts", len(res.Hosts)).Int("probes", res.ProbesSent).
				Bool("complete", res.Complete).Dur("took", res.Finished.Sub(res.Started)).Msg("sweep recorded")
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		})
	})
	return nil
}

// startPortScans starts the interval TCP port scan of every known address
// when scan.ports.enabled.
// The first scan waits until the projections have caught up (ready), so
// that it probes the addresses the inventory already knows.
func startPortScans(ctx context.Context, g *errgroup.Group, cfg *config.Config, st ingest.Appender, inv *inventory.Inventory, ready func(context.Context) error, log zerolog.Logger) error {
	p := cfg.Scan.Ports
	if !p.Enabled {
		return nil
	}
	ports, err := portscan.Ports(p.Custom)
	if err != nil {
		return fmt.Errorf("scan.ports.custom: %w", err)
	}
	host, _ := os.Hostname()
	source := cfg.ScanSource(host)
	plog := log.With().Str("source", source).Str("component", "portscan").Logger()
	in := ingest.New(st, source)
	sched := &devicesweep.Scheduler{Name: "portscan", Logf: func(f string, a ...any) { plog.Info().Msgf(f, a...) }}
	interval := time.Duration(p.Interval)
	g.Go(func() error {
		if err := ready(ctx); err != nil {
			return nil // stopped before ready
		}
		return sched.RunEvery(ctx, interval, interval/20, func(ctx context.Context) error {
			targets, err := portTargets(ctx, inv)
			if err != nil {
				return err
			}
			if len(targets) == 0 {
				plog.Info().Msg("port scan skipped: no known addresses yet")
				return nil
			}
			plog.Info().Int("targets", len(targets)).Int("ports", len(ports)).Msg("port scan started")
			res, err := portscan.Scan(ctx, targets, portscan.Params{Ports: ports, Concurrency: p.Concurrency})
			if res == nil {
				return err
			}
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			seq, aerr := in.PortScan(actx, res)
			if aerr != nil {
				return errors.Join(err, aerr)
			}
			plog.Info().Uint64("seq", seq).Int("targets", res.Targets).Int("probes", res.ProbesSent).
				Bool("complete", res.Complete).Dur("took", res.Finished.Sub(res.Started)).Msg("port scan recorded")
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		})
	})
	return nil
}

// portTargets lists every current (not retired) address of every device,
// with the ports the device advertises over DNS-SD.
func portTargets(ctx context.Context, inv *inventory.Inventory) ([]portscan.Target, error) {
	var out []portscan.Target
	f := projections.DeviceFilter{Limit: 1000, Sort: "ip"}
	for {
		page, err := inv.ListDevices(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, d := range page.Items {
			var extra []uint16
			for _, s := range d.Services {
				if s.Port != 0 {
					extra = append(extra, s.Port)
				}
			}
			for _, a := range d.Addresses {
				if a.RetiredAt != nil {
					continue
				}
				ip, err := netip.ParseAddr(a.IP)
				if err != nil {
					continue
				}
				out = append(out, portscan.Target{IP: ip, Extra: extra})
			}
		}
		if page.NextCursor == nil {
			return out, nil
		}
		f.Cursor = *page.NextCursor
	}
}
