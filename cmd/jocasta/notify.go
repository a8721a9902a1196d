package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi/mcp"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/rs/zerolog"
)

// notifyDestinations turns the notify.* blocks into the dispatcher's
// destinations, by name.
func notifyDestinations(cfg *config.Config) []notify.Destination {
	var out []notify.Destination
	for _, name := range slices.Sorted(maps.Keys(cfg.Notify)) {
		n := cfg.Notify[name]
		out = append(out, notify.Destination{Name: name, Enabled: n.Enabled, Timeout: time.Duration(n.Timeout),
			Push: n.Push, Webhook: n.Webhook, HTTP: n.HTTP})
	}
	return out
}

// newDispatcher builds the notification dispatcher over the core's store,
// inventory and rules. It does not start it.
func (c *core) newDispatcher(cfg *config.Config, log *slog.Logger) (*notify.Dispatcher, error) {
	return notify.New(notify.Options{
		DB: c.st.DB(), Update: c.st.Update, Head: c.st.Head, WaitFor: c.sync, Feed: c.inv, Rules: c.rules,
		Destinations: notifyDestinations(cfg), Log: log, Now: c.now, Observe: c.observeDelivery(),
		LinkBase: cfg.Server.BaseURL,
	})
}

// notifications is the API's and the CLI's view of the notifications:
// the dispatcher's destinations and ledger, rules set through the write
// side.
type notifications struct {
	d     *notify.Dispatcher
	rules *notify.Rules
	cmd   *command.Commander
	// source is "api" or "cli": the source of the rules events.
	source string
}

func (n *notifications) dest(name string) (*notify.Destination, error) {
	d, ok := n.d.Destination(name)
	if !ok {
		return nil, fmt.Errorf("notify.%s: %w", name, projections.ErrNotFound)
	}
	return d, nil
}

func (n *notifications) Destinations(ctx context.Context) ([]notify.View, error) {
	out := []notify.View{}
	for _, d := range n.d.Destinations() {
		v, err := notify.ViewOf(n.d.DB(), d, n.rules)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (n *notifications) Destination(ctx context.Context, name string) (notify.View, error) {
	d, err := n.dest(name)
	if err != nil {
		return notify.View{}, err
	}
	return notify.ViewOf(n.d.DB(), d, n.rules)
}

func (n *notifications) SetRules(ctx context.Context, actor, name string, rules []events.NotifyRule) (notify.View, error) {
	if _, err := n.dest(name); err != nil {
		return notify.View{}, err
	}
	if err := n.cmd.SetNotifyRules(ctx, n.source, actor, n.rules, name, rules); err != nil {
		return notify.View{}, err
	}
	return n.Destination(ctx, name)
}

func (n *notifications) Ledger(ctx context.Context, name string, f notify.LedgerFilter) (projections.Page[notify.Record], error) {
	if _, err := n.dest(name); err != nil {
		return projections.Page[notify.Record]{}, err
	}
	return notify.ReadLedger(n.d.DB(), name, f)
}

func (n *notifications) Test(ctx context.Context, name string) (notify.Attempt, error) {
	if _, err := n.dest(name); err != nil {
		return notify.Attempt{}, err
	}
	return n.d.Test(ctx, name)
}

func (n *notifications) Redeliver(ctx context.Context, name, id string) (int, error) {
	if _, err := n.dest(name); err != nil {
		return 0, err
	}
	k, err := n.d.Redeliver(name, id)
	if errors.Is(err, notify.ErrNotDead) || errors.Is(err, projections.ErrNotFound) {
		return 0, err
	}
	return k, err
}

// startNotifications builds serve's dispatcher and hands the API its
// notifications and, when server.mcp.enabled, the MCP endpoint. The
// caller runs the dispatcher.
func (c *core) startNotifications(cfg *config.Config, log zerolog.Logger) (*notify.Dispatcher, error) {
	disp, err := c.newDispatcher(cfg, slogFor(log).With("component", "notify"))
	if err != nil {
		return nil, err
	}
	if cfg.Server.BaseURL == "" {
		for _, d := range disp.Destinations() {
			if d.Enabled && d.Push != nil {
				log.Warn().Str("destination", d.Name).
					Msg("push messages carry no link back to the device: set server.base_url to the web interface's address as a phone reaches it (such as http://jocasta.lan:8080)")
				break
			}
		}
	}
	c.notes = &notifications{d: disp, rules: c.rules, cmd: c.commander(), source: "api"}
	if cfg.Server.MCP.Enabled {
		if e := c.mcpHandler(cfg, log); e != nil {
			c.mcp, c.mcpEnd = e, e
		}
	}
	return disp, nil
}

// mcpHandler is the MCP endpoint over the core's inventory and write side.
func (c *core) mcpHandler(cfg *config.Config, log zerolog.Logger) *mcp.Endpoint {
	md := mcp.Deps{Inventory: c.inv, Scans: c.scans, Commander: c.commanderFor("mcp"), Version: version, Log: slogFor(log).With("component", "mcp"), Now: c.now}
	// The traffic and DNS tools are offered only when something records
	// traffic or lookups, as the API's endpoints answer only then.
	if t := trafficAPI(cfg, c.traffic); t != nil {
		md.Traffic = t
	}
	if d := dnsAPI(cfg, c.dns); d != nil {
		md.DNS = d
	}
	md.History = c.inv // the inventory at a past instant
	h, err := mcp.NewEndpoint(md)
	if err != nil { // only for missing dependencies, which core always has
		log.Error().Err(err).Msg("MCP endpoint unavailable")
		return nil
	}
	return h
}
