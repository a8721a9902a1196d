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
	p := cfg.Plugins
	var out []string
	out = notRead(out, "routerapi", p.RouterAPI, func(v config.RouterAPI) bool { return v.Enabled })
	out = notRead(out, "rpcrouter", p.RPCRouter, func(v config.RPCRouter) bool { return v.Enabled })
	out = notRead(out, "flowlistener", p.FlowListener, func(v config.FlowListener) bool { return v.Enabled })
	out = notRead(out, "dnsnode", p.DNSNode, func(v config.DNSNode) bool { return v.Enabled })
	out = notRead(out, "dnsfilter1", p.DNSFilter1, func(v config.DNSFilter1) bool { return v.Enabled })
	out = notRead(out, "dnsfilter2", p.DNSFilter2, func(v config.DNSFilter2) bool { return v.Enabled })
	for _, name := range slices.Sorted(maps.Keys(cfg.Notify)) {
		if cfg.Notify[name].Enabled {
			out = append(out, fmt.Sprintf("notify.%s is enabled, but this build sends no notifications yet: nothing is sent to it", name))
		}
	}
	return out
}

// notRead appends to out a line for each enabled instance of the plugin
// kind, in name order.
func notRead[V any](out []string, kind string, instances map[string]V, enabled func(V) bool) []string {
	for _, inst := range slices.Sorted(maps.Keys(instances)) {
		if enabled(instances[inst]) {
			out = append(out, fmt.Sprintf("plugins.%s.%s is enabled, but this build has no %s source yet: it is not read", kind, inst, kind))
		}
	}
	return out
}
