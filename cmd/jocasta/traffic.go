package main

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/store"
)

// countries is the embedded IP → country database, opened once per
// process (replays build fresh projections; the database is read in
// place in the binary, so each would only repeat the check of its
// metadata).
var countries = sync.OnceValues(func() (*traffic.Countries, error) { return traffic.LoadCountries("") })

// countriesFor is location.country_db's database, or the embedded one.
func countriesFor(path string) (*traffic.Countries, error) {
	if path == "" {
		return countries()
	}
	return traffic.LoadCountries(path)
}

// newTraffic builds the traffic projection over the inventory's address
// history, with peers' countries and location.country as home.
func newTraffic(cfg *config.Config, inv *inventory.Inventory, peerName func(deviceID string, peer netip.Addr, at time.Time) string, log zerolog.Logger) (*traffic.Projection, error) {
	c, err := countriesFor(cfg.Location.CountryDB)
	if err != nil && cfg.Location.CountryDB != "" {
		return nil, fmt.Errorf("location.country_db %s: %w", cfg.Location.CountryDB, err)
	}
	if err != nil {
		ev := log.Warn()
		if !errors.Is(err, traffic.ErrNoCountryData) {
			ev = log.Error()
		}
		ev.Err(err).Msg("IP → country database unavailable; traffic peers will show no country (build with make to embed it)")
	}
	return traffic.New(traffic.Options{Addresses: inv, Countries: c, Home: cfg.Location.Country, Outside: inv.Outside, PeerName: peerName, ReleaseMapped: store.ReleaseMappedTx})
}

// trafficAPI is the traffic read model for the API and MCP when a flow
// listener is enabled, nil otherwise (the API then answers 404
// not-recorded, naming the plugin that would record traffic). Hours
// recorded while a listener was enabled stay in the database for
// retention.traffic either way.
func trafficAPI(cfg *config.Config, p *traffic.Projection) *traffic.Projection {
	if p == nil || len(enabledInstances(cfg, "plugins.flowlistener")) == 0 {
		return nil
	}
	return p
}

// trafficDeps is trafficAPI as httpapi's dependency: a nil interface
// (not an interface holding a nil pointer) when traffic is not recorded.
func trafficDeps(cfg *config.Config, p *traffic.Projection) httpapi.Traffic {
	if t := trafficAPI(cfg, p); t != nil {
		return t
	}
	return nil
}
