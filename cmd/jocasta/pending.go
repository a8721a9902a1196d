package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// notRunYet lists, one line each, the enabled plugin instances and
// notification destinations that this build accepts in its configuration
// but does not run yet (no source or notifier package exists for them), so
// that serve says so in its log instead of ignoring them silently. The
// lines name the key, never a value.
func notRunYet(cfg *config.Config) []string {
	var out []string
	kind := func(name string, enabled map[string]bool) {
		for _, inst := range slices.Sorted(maps.Keys(enabled)) {
			if enabled[inst] {
				out = append(out, fmt.Sprintf("plugins.%s.%s is enabled, but this build has no %s source yet: it is not read", name, inst, name))
			}
		}
	}
	p := cfg.Plugins
	kind("routerapi", enabledOf(p.RouterAPI, func(v config.RouterAPI) bool { return v.Enabled }))
	kind("rpcrouter", enabledOf(p.RPCRouter, func(v config.RPCRouter) bool { return v.Enabled }))
	kind("flowlistener", enabledOf(p.FlowListener, func(v config.FlowListener) bool { return v.Enabled }))
	kind("dnsnode", enabledOf(p.DNSNode, func(v config.DNSNode) bool { return v.Enabled }))
	kind("dnsfilter1", enabledOf(p.DNSFilter1, func(v config.DNSFilter1) bool { return v.Enabled }))
	kind("dnsfilter2", enabledOf(p.DNSFilter2, func(v config.DNSFilter2) bool { return v.Enabled }))
	for _, name := range slices.Sorted(maps.Keys(cfg.Notify)) {
		if cfg.Notify[name].Enabled {
			out = append(out, fmt.Sprintf("notify.%s is enabled, but this build sends no notifications yet: nothing is sent to it", name))
		}
	}
	return out
}

func enabledOf[V any](m map[string]V, on func(V) bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = on(v)
	}
	return out
}
