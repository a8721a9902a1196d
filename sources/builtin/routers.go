package builtin

import (
	"fmt"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/routerapi"
	"github.com/jocasta/jocasta/sources/rpcrouter"
)

// readInterval is how often a plugin instance is read: once per
// scan.devices.interval, the sweep's rhythm, so that every source has
// the same chance to see a device within the online window.
func readInterval(env sources.Env) (time.Duration, error) {
	var every time.Duration
	if err := env.Decode("scan.devices.interval", &every); err != nil {
		return 0, err
	}
	if every <= 0 {
		every = 5 * time.Minute
	}
	return every, nil
}

func buildRouterAPI(env sources.Env) ([]sources.Instance, []string, error) {
	return buildPlugins(env, "routerapi", "plugins.routerapi", func(name string) (sources.Poller, time.Duration, error) {
		var c routerapi.Config
		c.SetDefaults()
		if err := env.Decode("plugins.routerapi."+name, &c); err != nil {
			return nil, 0, err
		}
		r, err := routerapi.New(c, env.Log.With("source", "routerapi:"+name))
		return r, c.Timeout, err
	})
}

func buildRPCRouter(env sources.Env) ([]sources.Instance, []string, error) {
	return buildPlugins(env, "rpcrouter", "plugins.rpcrouter", func(name string) (sources.Poller, time.Duration, error) {
		var c rpcrouter.Config
		c.SetDefaults()
		if err := env.Decode("plugins.rpcrouter."+name, &c); err != nil {
			return nil, 0, err
		}
		r, err := rpcrouter.New(c, env.Log.With("source", "rpcrouter:"+name))
		return r, c.Timeout, err
	})
}

// buildPlugins builds one instance per enabled key under key, each read
// on the sweep's interval and bounded by its own timeout.
func buildPlugins(env sources.Env, kind, key string, build func(name string) (sources.Poller, time.Duration, error)) ([]sources.Instance, []string, error) {
	names := env.Enabled(key)
	if len(names) == 0 {
		return nil, nil, nil
	}
	every, err := readInterval(env)
	if err != nil {
		return nil, nil, err
	}
	var out []sources.Instance
	for _, name := range names {
		p, timeout, err := build(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s.%s: %w", key, name, err)
		}
		out = append(out, sources.Instance{Source: kind + ":" + name, Kind: kind, Interval: every, Timeout: timeout, Poller: p})
	}
	return out, nil, nil
}
