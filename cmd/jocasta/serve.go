package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/bus"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/presence"
	"github.com/jocasta/jocasta/projections/retention"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/sources/builtin"
	"github.com/jocasta/jocasta/sources/scheduler"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/ui"
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
	if path != "" {
		e.ctx = context.WithValue(e.ctx, configPathKey{}, path)
	}
	if path == "" {
		path = "(none: defaults and SVC_ variables)"
	}
	log.Info().Str("version", version).Str("config", path).Str("db", cfg.DBFile()).Msg("jocasta starting")

	// budget keeps the soft memory limit near what serve holds once
	// loaded (heapBudget), under a cgroup's limit when there is one.
	var budget *heapBudget
	if set, limit, cgroup := tuneServeGC("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup"); set && limit > 0 {
		log.Info().Int("gogc", serveGCPercent).Int64("memory_limit_mib", limit>>20).Int64("cgroup_limit_mib", cgroup>>20).Msg("collector target and soft memory limit set from the cgroup's memory limit (GOGC and GOMEMLIMIT are unset); once loaded, the limit follows the live heap below it")
		budget = newHeapBudget(limit)
	} else if set {
		log.Info().Int("gogc", serveGCPercent).Msg("collector target set (GOGC and GOMEMLIMIT are unset); once loaded, a soft memory limit follows the live heap")
		budget = newHeapBudget(0)
	}
	return serve(e.ctx, cfg, log, budget, nil)
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
// (see docs/performance.md), under a soft memory limit of half the
// machine's memory (tuneReplayGC: the live heap of a long log's replay
// is hundreds of MB). A replay that a running serve does keeps serve's
// target.
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
	// sensorsListening learns where the embedded NATS server listens.
	sensorsListening func(addr string)
}

// recordRules appends inventory.rules_set once the inventory has caught
// up with the log as it was at start, when the configured online window
// and address grace differ from the rules last recorded (or none are),
// and waits until the inventory has applied it.
func recordRules(ctx context.Context, st *store.Store, run *runner.Runner, inv *inventory.Inventory, cfg *config.Config, head uint64, now func() time.Time) error {
	if err := run.WaitFor(ctx, head); err != nil {
		return err
	}
	window := time.Duration(cfg.Inventory.OnlineWindow)
	if window <= 0 {
		window = inventory.DefaultOnlineWindow
	}
	// The configuration's default is 6h: 0 here is a configured 0s.
	p, differs := inv.RulesEvent(window, time.Duration(cfg.Inventory.AddressGrace))
	if !differs {
		return nil
	}
	ev, err := events.New(events.KindPresenceRulesSet, p, now())
	if err != nil {
		return err
	}
	ev.Source, ev.Actor = "config", "config"
	done, err := st.Append(ctx, ev)
	if err != nil {
		return fmt.Errorf("append %s: %w", events.KindPresenceRulesSet, err)
	}
	return run.WaitFor(ctx, done[0].Seq)
}

// serve runs the service until ctx is done, then stops within stopBudget.
// budget, when not nil, keeps the collector's soft memory limit once the
// projections are loaded.
func serve(ctx context.Context, cfg *config.Config, log zerolog.Logger, budget *heapBudget, hooks *serveHooks) error {
	st, err := openServeStore(cfg)
	if err != nil {
		return err
	}
	now := time.Now
	vendors := loadVendors(log)
	set, err := newProjections(cfg, vendors, now, log)
	if err != nil {
		st.Close()
		return err
	}
	doorbell := bus.New(log)
	st.OnCommit(doorbell.Ring)
	run, err := runner.New(st, set.list(), runner.Options{Log: slogFor(log).With("component", "runner")})
	if err != nil {
		st.Close()
		return err
	}
	c := &core{st: st, run: run, access: set.access, inv: set.inv, scans: set.scans, traffic: set.traffic, dns: set.dns, rules: set.rules, now: now, sync: run.WaitFor}
	c.health = &health{caughtUp: run, st: st}
	c.metrics = newServiceMetrics(c)
	rlog := log.With().Str("component", "replay").Logger()
	c.progress = func(format string, args ...any) { rlog.Info().Msgf(format, args...) }
	c.projs = func() []runner.Projection {
		fresh, _ := newProjections(cfg, vendors, now, zerolog.Nop())
		return fresh.list()
	}

	// The notifications first: the web interface's Notifications page
	// reads them.
	disp, err := c.startNotifications(cfg, log)
	if err != nil {
		st.Close()
		return err
	}
	web, setupSecret, err := c.webUI(cfg, log)
	if err != nil {
		st.Close()
		return err
	}
	c.ui = web
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
	if c.mcpEnd != nil {
		httpSrv.RegisterOnShutdown(c.mcpEnd.Close) // no MCP session outlives serve
	}

	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	g, gctx := errgroup.WithContext(work)

	bell, err := doorbell.Subscribe(gctx, "serve")
	if err != nil {
		return err
	}
	clock := presence.NewClock(st, set.inv, now)
	// rulesDone closes once the presence rules in force are in the log
	// (recordRules, below): the clock and the sources append nothing
	// before, so nothing is judged under rules no longer configured.
	rulesDone := make(chan struct{})
	g.Go(func() error { return run.Run(gctx) })
	g.Go(func() error {
		for range bell {
			run.Notify()
			disp.Notify()
			clock.Poke()
		}
		return nil
	})
	g.Go(func() error {
		select {
		case <-rulesDone:
		case <-gctx.Done():
			return nil
		}
		return clock.Run(gctx)
	})
	g.Go(func() error { return disp.Run(gctx) })
	g.Go(func() error { return watchStore(gctx, st) })
	loaded := func(ctx context.Context) error { return run.WaitFor(ctx, st.Head()) }
	g.Go(func() error { return releaseMapped(gctx, st, loaded, releaseEvery, log) })
	if budget != nil {
		g.Go(func() error { return budget.keep(gctx, loaded, time.Second, log) })
	}
	verifyFirst := time.Minute
	if hooks != nil && hooks.verifyFirst > 0 {
		verifyFirst = hooks.verifyFirst
	}
	g.Go(func() error {
		return c.health.runVerify(gctx, log.With().Str("component", "verify").Logger(), verifyFirst, verifyEvery)
	})
	purger, err := retention.NewPurger(st, set.inv, run, retention.Options{
		History: time.Duration(cfg.Retention.History),
		Traffic: time.Duration(cfg.Retention.Traffic),
		DNS:     time.Duration(cfg.Retention.DNS),
		Devices: time.Duration(cfg.Retention.Devices),
	}, now)
	if err != nil {
		return err
	}
	purger.Log = slogFor(log).With("component", "retention")
	purger.Keepers = []retention.Keeper{
		{Name: "traffic_rows", Cutoff: func(rp *events.RetentionPurged) *time.Time { return rp.TrafficBefore }, RowsBefore: set.traffic.RowsBefore},
		{Name: "dns_rows", Cutoff: func(rp *events.RetentionPurged) *time.Time { return rp.DNSBefore }, RowsBefore: set.dns.RowsBefore},
		{Name: "scans", Cutoff: func(rp *events.RetentionPurged) *time.Time { return rp.HistoryBefore }, RowsBefore: set.scans.RowsBefore},
	}
	if hooks != nil && hooks.purgeDelay > 0 {
		purger.FirstDelay = hooks.purgeDelay
	}
	clock.Log = slogFor(log).With("component", "clock")
	g.Go(func() error { return purger.Run(gctx) })
	g.Go(func() error { return set.access.RunFlusher(gctx, st, time.Minute) })
	sensors, err := startSensors(gctx, cfg, st, c.metrics, log)
	if err != nil {
		ln.Close()
		control.Shutdown(context.Background())
		stopWork()
		g.Wait()
		st.Close()
		return err
	}
	if sensors != nil {
		if hooks != nil && hooks.sensorsListening != nil {
			hooks.sensorsListening(sensors.addr())
		}
		g.Go(func() error { return sensors.run(gctx) })
	}
	headAtStart := st.Head()
	// The presence rules in force go into the log before any source or
	// clock tick writes: from then on a replay under another
	// configuration still shows the presence that was shown (rules.go in
	// the inventory).
	g.Go(func() error {
		defer close(rulesDone)
		if err := recordRules(gctx, st, run, set.inv, cfg, headAtStart, now); err != nil && gctx.Err() == nil {
			log.Error().Err(err).Msg("could not record the presence rules in the log")
		}
		return nil
	})
	slogger := slogFor(log)
	insts, swarn, err := builtin.Build(builtin.Kinds(), withDNSCursor(sourceEnv(cfg, set.inv, slogger), set.dns))
	for _, w := range swarn {
		log.Warn().Msg(w)
	}
	if err == nil {
		sched := &scheduler.Scheduler{
			Sink: c.metrics.sink(ingest.NewSink(st)),
			Ready: func(ctx context.Context) error {
				select {
				case <-rulesDone:
				case <-ctx.Done():
					return ctx.Err()
				}
				return run.WaitFor(ctx, headAtStart)
			},
			Log: slogger,
		}
		err = scheduler.Check(insts)
		g.Go(func() error { return sched.Run(gctx, insts) })
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
	g.Go(func() error {
		// Once the read models have caught up: where to go, and, on a
		// first run, the setup link and the command for a first token.
		if run.WaitFor(gctx, headAtStart) != nil {
			return nil
		}
		base := browsableBase(ln.Addr(), cfg.Server.Host)
		if cfg.Server.BaseURL != "" {
			base = cfg.Server.BaseURL
		}
		ev := log.Info().Str("url", base+"/")
		if len(set.access.Tokens(now())) == 0 {
			tokenCmd := "jocasta token create --name NAME"
			if p, ok := ctx.Value(configPathKey{}).(string); ok && p != "" {
				tokenCmd += " --config " + p
			}
			ev = ev.Str("first_api_token", tokenCmd)
		}
		ev.Msg("ready: the web interface and the API answer")
		for _, g := range set.traffic.Unclosed() {
			log.Warn().Str("source", g.Source).Time("last_window_end", g.Last).
				Msg("the flow listener's previous run ended without closing its window (a crash or a kill): the flows it had counted after that (at most one 60 s window) were lost")
		}
		if !set.access.HasUsers() {
			log.Warn().Str("setup_link", base+"/setup?token="+setupSecret).
				Msg("no web sign-in account exists: open this one-time link to create the first one (or run jocasta user add)")
		}
		return nil
	})
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
	cerr := st.Close()
	// After Close no append is in flight (a control-socket write may
	// outlive the socket's shutdown): st.Err is final.
	err = stopCause(err, st.Err())
	if dbErr := (*dbFailedError)(nil); errors.As(err, &dbErr) {
		log.Error().Err(dbErr.cause).Msg(dbFailedMsg)
	}
	if err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stopped with an error")
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// webUI builds the web interface over the core's read models and write
// side, with a one-time setup link whose secret it returns (serve prints
// the link once the projections show that no account exists).
func (c *core) webUI(cfg *config.Config, log zerolog.Logger) (http.Handler, string, error) {
	loc := time.Local
	if cfg.Location.Timezone != "" {
		l, err := time.LoadLocation(cfg.Location.Timezone)
		if err != nil {
			return nil, "", fmt.Errorf("location.timezone: %w", err)
		}
		loc = l
	}
	settings, err := cfg.Redacted().YAML()
	if err != nil {
		return nil, "", fmt.Errorf("ui: effective config: %w", err)
	}
	setup, secret := ui.NewSetup()
	h, err := ui.New(ui.Config{
		SessionLifetime: time.Duration(cfg.Server.Auth.SessionLifetime),
		IdleTimeout:     time.Duration(cfg.Server.Auth.IdleTimeout),
		CookieSecure:    cfg.Server.Auth.CookieSecure,
		Location:        loc,
		Settings:        string(settings),
	}, c.uiDeps(cfg, setup, log))
	if err != nil {
		return nil, "", err
	}
	return h, secret, nil
}

// uiDeps are the web interface's read models and write sides: the
// traffic and DNS read models only when a plugin records them (the pages
// then say which would), the notifications with the signed-in user as
// the actor and "ui" as the source of rules events.
func (c *core) uiDeps(cfg *config.Config, setup *ui.Setup, log zerolog.Logger) ui.Deps {
	d := ui.Deps{Inventory: c.inv, Scans: c.scans, Accounts: c.access, Commander: c.commanderFor("ui"), Setup: setup,
		Log: log.With().Str("component", "ui").Logger(), Now: c.now}
	// The History page reads the inventory's history; merging is the
	// Commander's (ui.Merger).
	d.History = c.inv
	if t := trafficAPI(cfg, c.traffic); t != nil {
		d.Traffic = t
	}
	if c.dns != nil && dnsEnabled(cfg) {
		d.DNS = c.dns
	}
	if n, ok := c.notes.(*notifications); ok && n != nil {
		un := *n
		un.source = "ui"
		d.Notifications = &un
	}
	return d
}

// configPathKey holds, in serve's context, the config file serve read, for
// the first-token hint of its ready line.
type configPathKey struct{}

// browsableBase is the URL a person opens for addr, the listening
// address: a wildcard one (0.0.0.0, ::) becomes server.host when that is
// a name, else localhost.
func browsableBase(addr net.Addr, host string) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || (ta.IP != nil && !ta.IP.IsUnspecified()) {
		return "http://" + addr.String()
	}
	h := host
	if ip := net.ParseIP(host); h == "" || ip != nil {
		h = "localhost"
	}
	return "http://" + net.JoinHostPort(h, strconv.Itoa(ta.Port))
}
