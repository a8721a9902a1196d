package main

import (
	"net/http"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/projections/access"
	dnsproj "github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/oui"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/store"
	"github.com/rs/zerolog"
)

// lockTimeout bounds how long an admin command opening a database held by
// another process waits before saying so (a serve that is starting takes
// the lock before it listens on its control socket).
const lockTimeout = 2 * time.Second

// serveLockTimeout is the same bound for serve, which must refuse a
// database another process holds within 2 seconds in all.
const serveLockTimeout = time.Second

// projectionSet builds every projection from the configuration.
type projectionSet struct {
	inv     *inventory.Inventory
	scans   *scanlog.Log // the scan log (projections/scanlog)
	access  *access.Projection
	traffic *traffic.Projection
	dns     *dnsproj.Projection
	rules   *notify.Rules // which changes each notification destination receives
}

// addressGrace is inventory.address_grace for the inventory, whose
// Options take 0 as "the default, 6h": the configuration's 0s (retire an
// address as soon as the device is found elsewhere) is the smallest
// grace there is, a nanosecond.
func addressGrace(cfg *config.Config) time.Duration {
	if g := time.Duration(cfg.Inventory.AddressGrace); g > 0 {
		return g
	}
	return time.Nanosecond
}

// newProjections builds the projections; log gets their warnings at
// start (the country database missing).
func newProjections(cfg *config.Config, vendors *oui.Registry, now func() time.Time, log zerolog.Logger) (*projectionSet, error) {
	inv, err := inventory.New(inventory.Options{
		OnlineWindow: time.Duration(cfg.Inventory.OnlineWindow),
		AddressGrace: addressGrace(cfg),
		Vendor:       vendors.Lookup,
	})
	if err != nil {
		return nil, err
	}
	dp, err := dnsproj.New(dnsproj.Options{Addresses: inv})
	if err != nil {
		return nil, err
	}
	// Traffic peers are named by the DNS answers recorded for the device.
	tr, err := newTraffic(cfg, inv, dp.PeerName, log)
	if err != nil {
		return nil, err
	}
	return &projectionSet{inv: inv, scans: scanlog.New(nil), access: access.New(now), traffic: tr, dns: dp, rules: notify.NewRules()}, nil
}

func (p *projectionSet) list() []runner.Projection {
	return []runner.Projection{p.inv, p.scans, p.access, p.traffic, p.dns, p.rules}
}

// loadVendors loads the MAC vendor registry, logging when the build has
// no data (vendors are then empty, everything else works).
func loadVendors(log zerolog.Logger) *oui.Registry {
	reg, err := oui.Load()
	if err != nil {
		log.Warn().Err(err).Msg("MAC vendor registry unavailable; devices will show no vendor (build with make to generate it)")
	}
	return reg
}

// openCore opens the database and catches the projections up with the
// log, for admin commands run while serve does not.
func openCore(ctx context.Context, cfg *config.Config, log zerolog.Logger, mode openMode) (*core, error) {
	if mode == openReadOnly {
		st, err := openStore(cfg, openReadOnly)
		if err != nil {
			return nil, err
		}
		return &core{st: st, now: time.Now}, nil
	}
	st, err := openStore(cfg, mode)
	if err != nil {
		return nil, err
	}
	now := time.Now
	set, err := newProjections(cfg, loadVendors(log), now, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	run, err := runner.New(st, set.list(), runner.Options{Log: slogFor(log)})
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := run.CatchUp(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("catch up projections: %w", err)
	}
	c := &core{st: st, run: run, access: set.access, inv: set.inv, scans: set.scans, traffic: set.traffic, dns: set.dns, rules: set.rules, now: now,
		sync: func(ctx context.Context, _ uint64) error { return run.CatchUp(ctx) }}
	c.projs = func() []runner.Projection {
		fresh, _ := newProjections(cfg, loadVendors(zerolog.Nop()), now, zerolog.Nop())
		return fresh.list()
	}
	return c, nil
}

func openStore(cfg *config.Config, mode openMode) (*store.Store, error) {
	st, err := openStoreWithin(cfg, lockTimeout, mode)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%s is in use by another process; if jocasta serve runs, its control socket %s did not answer", cfg.DBFile(), cfg.SocketPath())
	}
	return st, err
}

// openServeStore opens the database for serve. It refuses at once when
// another serve answers on the control socket, and within
// serveLockTimeout when another process holds the database.
func openServeStore(cfg *config.Config) (*store.Store, error) {
	if _, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg)); ok {
		return nil, fmt.Errorf("jocasta serve already runs on %s (its control socket %s answers); stop it first, or give this one another db.path", cfg.DBFile(), cfg.SocketPath())
	}
	st, err := openStoreWithin(cfg, serveLockTimeout, openCreate)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%s is in use by another process (a jocasta serve that is starting, or an admin command); stop it first, or give this one another db.path", cfg.DBFile())
	}
	return st, err
}

// openMode says what an open may do to the database file.
type openMode int

const (
	// openCreate creates a missing database (serve; the commands that set
	// one up: token create, user add).
	openCreate openMode = iota
	// openExisting refuses a missing or empty file: a command that reads
	// or changes what is there must not answer from a new, empty
	// database on a mistyped db.path.
	openExisting
	// openReadOnly opens an existing file read-only (log verify, export,
	// tail).
	openReadOnly
)

func openStoreWithin(cfg *config.Config, lock time.Duration, mode openMode) (*store.Store, error) {
	path := cfg.DBFile()
	opts := store.Options{LockTimeout: lock, MustExist: mode != openCreate, ReadOnly: mode == openReadOnly}
	if mode == openCreate {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create db.path %s: %w", filepath.Dir(path), err)
		}
	}
	st, err := store.Open(path, opts)
	if errors.Is(err, store.ErrNoDatabase) {
		return nil, userErrorf("no database at %s: check db.path and db.name (or --config), or start jocasta serve once to create it", path)
	}
	if errors.Is(err, store.ErrCorrupt) && mode != openCreate {
		return nil, userErrorf("%s is not a jocasta database: %v", path, err)
	}
	return st, err
}

// Close closes the database.
func (c *core) Close() error { return c.st.Close() }

// commander is the write side over the core's store and read models.
func (c *core) commander() *command.Commander {
	return &command.Commander{Log: c.st, Sync: c.sync, Devices: c.inv, Accounts: c.access, Now: c.now}
}

// commanderFor is the write side for edits made through source ("ui",
// "mcp"): the source their events record.
func (c *core) commanderFor(source string) *command.Commander {
	cmd := c.commander()
	cmd.DeviceSource = source
	return cmd
}

// api builds the HTTP API over the core's projections.
func (c *core) api(cfg *config.Config, log zerolog.Logger) (http.Handler, error) {
	return httpapi.New(httpapi.Config{
		TrustedProxies: cfg.Server.TrustedProxies,
		ProxyHeader:    cfg.Server.ProxyHeader,
		CORSOrigins:    cfg.Server.CORS.AllowedOrigins,
		MCPEnabled:     cfg.Server.MCP.Enabled,
		UI:             c.ui,
		MCP:            c.mcp,
		Metrics:        c.metricsHandler(),
		ObserveRequest: c.observeRequest(),
	}, httpapi.Deps{Notifications: c.notes, Inventory: c.inv, Scans: c.scans, Traffic: trafficDeps(cfg, c.traffic), DNS: dnsAPI(cfg, c.dns), Commander: c.commander(), Auth: c.access, Ready: c.readiness(),
		Space: newDiskSpace(filepath.Dir(cfg.DBFile())), Log: log, Now: c.now})
}

// readiness is serve's health when it runs, else the runner's catch-up.
func (c *core) readiness() httpapi.Readiness {
	if c.health != nil {
		return c.health
	}
	return c.run
}
