// Package builtin is the one registration list of the source kinds this
// build ships, CoreDNS-style: each kind appears once in Kinds, and adding
// a kind is its package plus one line here. There are no init() side
// effects, so tests can build registries of their own with fakes.
package builtin

import (
	"fmt"
	"net/netip"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/devicesweep"
	"github.com/jocasta/jocasta/sources/portscan"
	"github.com/jocasta/jocasta/sources/resolve/dnssd"
	"github.com/jocasta/jocasta/sources/resolve/mdns"
	"github.com/jocasta/jocasta/sources/resolve/netbios"
	"github.com/jocasta/jocasta/sources/resolve/rdns"
	"github.com/jocasta/jocasta/sources/resolve/ssdp"
)

// Kinds lists every source kind, in the order they start.
func Kinds() []sources.Kind {
	return []sources.Kind{
		{Name: "sweep", Doc: "ICMP and ARP sweep of networks, the neighbour table, and the name resolvers (scan.devices)", Build: buildSweep},
		{Name: "portscan", Doc: "TCP port scan of every known address (scan.ports)", Build: buildPortScan},
		{Name: "routerapi", Doc: "routers, switches and access points over their REST API", Key: "plugins.routerapi", Build: buildRouterAPI},
		{Name: "rpcrouter", Doc: "routers and access points over their JSON-RPC bus", Key: "plugins.rpcrouter", Build: buildRPCRouter},
		{Name: "flowlistener", Listener: true, Doc: "NetFlow v5/v9 and IPFIX exports over UDP", Key: "plugins.flowlistener", Build: buildFlows},
		{Name: "dnsnode", Doc: "a DNS server node's query log", Key: "plugins.dnsnode", Build: buildDNSNode},
		{Name: "dnsfilter1", Doc: "a DNS filtering server's query log (version 6)", Key: "plugins.dnsfilter1", Build: buildDNSFilter1},
		{Name: "dnsfilter2", Doc: "a second DNS filtering server's query log", Key: "plugins.dnsfilter2", Build: buildDNSFilter2},
	}
}

// Build builds the enabled instances of every kind in kinds. Warnings
// are one line each: a kind of the contract this build cannot run yet is
// reported for each of its enabled instances, by key, never by value.
func Build(kinds []sources.Kind, env sources.Env) ([]sources.Instance, []string, error) {
	var (
		out      []sources.Instance
		warnings []string
	)
	for _, k := range kinds {
		if k.Build == nil {
			for _, inst := range env.Enabled(k.Key) {
				warnings = append(warnings, fmt.Sprintf("%s.%s is enabled, but this build has no %s source yet: it is not read", k.Key, inst, k.Name))
			}
			continue
		}
		insts, ws, err := k.Build(env)
		if err != nil {
			return nil, nil, fmt.Errorf("source %s: %w", k.Name, err)
		}
		out = append(out, insts...)
		warnings = append(warnings, ws...)
	}
	return out, warnings, nil
}

// scanSource is the source name of the sweep and the port scan:
// scan.source, or "sweep:" and the host name.
func scanSource(env sources.Env) (string, error) {
	var src string
	if err := env.Decode("scan.source", &src); err != nil {
		return "", err
	}
	if src == "" {
		src = "sweep:" + env.Host
	}
	return src, nil
}

func buildSweep(env sources.Env) ([]sources.Instance, []string, error) {
	var s devicesweep.Settings
	if err := env.Decode("scan.devices", &s); err != nil {
		return nil, nil, err
	}
	log := env.Log
	if !s.Enabled {
		log.Info("interval sweeps are off (scan.devices.enabled: false)")
		return nil, nil, nil
	}
	var networks []netip.Prefix
	if err := env.Decode("networks", &networks); err != nil {
		return nil, nil, err
	}
	if len(networks) == 0 {
		return nil, []string{"no networks to sweep: list CIDR prefixes under networks (jocasta init finds this host's)"}, nil
	}
	source, err := scanSource(env)
	if err != nil {
		return nil, nil, err
	}
	swlog := log.With("source", source)
	var enrichers []sources.Enricher
	if s.ResolveNames {
		enrichers = append(enrichers, rdns.New(rdns.Options{}))
	}
	if s.ResolveMDNS {
		enrichers = append(enrichers, mdns.New(mdns.Options{}))
	}
	if s.ResolveNetBIOS {
		enrichers = append(enrichers, netbios.New(netbios.Options{}))
	}
	if s.ResolveDNSSD {
		enrichers = append(enrichers, dnssd.New(dnssd.Options{}))
	}
	if s.ResolveSSDP {
		enrichers = append(enrichers, ssdp.New(ssdp.Options{}))
	}
	sw, err := devicesweep.New(devicesweep.Config{
		Networks:    networks,
		Rate:        s.Rate,
		Rounds:      s.Rounds,
		Wait:        s.Wait,
		ResolveMACs: s.ResolveMACs,
		Enrichers:   enrichers,
		Log:         swlog,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := sw.Check(); err != nil {
		return nil, nil, err
	}
	// A sweep has no timeout of its own: a large network may take longer
	// than the interval, and the next one waits for it.
	return []sources.Instance{{Source: source, Kind: "sweep", Interval: s.Interval, Poller: sw}}, nil, nil
}

func buildPortScan(env sources.Env) ([]sources.Instance, []string, error) {
	var s portscan.Settings
	if err := env.Decode("scan.ports", &s); err != nil {
		return nil, nil, err
	}
	if !s.Enabled {
		return nil, nil, nil
	}
	source, err := scanSource(env)
	if err != nil {
		return nil, nil, err
	}
	p, err := portscan.NewPoller(s, env.Known)
	if err != nil {
		return nil, nil, err
	}
	// The first scan waits until the read models have caught up, so that
	// it probes the addresses the inventory already knows.
	return []sources.Instance{{Source: source, Kind: "portscan", Interval: s.Interval, WaitReady: true, Poller: p}}, nil, nil
}
