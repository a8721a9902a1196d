package main

import (
	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/httpapi"
	dnsproj "github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/sources"
)

// dnsKinds are the configuration keys of the DNS query-log plugins.
var dnsKinds = []string{"plugins.dnsnode", "plugins.dnsfilter1", "plugins.dnsfilter2"}

// dnsEnabled reports whether any DNS plugin instance is enabled: only
// then does the API answer GET /api/devices/{id}/dns (else 404
// not-recorded, naming the plugins).
func dnsEnabled(cfg *config.Config) bool {
	for _, k := range dnsKinds {
		if len(enabledInstances(cfg, k)) > 0 {
			return true
		}
	}
	return false
}

// dnsAPI is the DNS read model for the API when a DNS plugin is enabled,
// nil otherwise.
func dnsAPI(cfg *config.Config, p *dnsproj.Projection) httpapi.DNS {
	if p == nil || !dnsEnabled(cfg) {
		return nil
	}
	return p
}

// withDNSCursor gives the sources the cursors the DNS read model holds:
// a query-log reader continues from its source's last recorded read.
func withDNSCursor(env sources.Env, p *dnsproj.Projection) sources.Env {
	if p != nil {
		env.Cursor = p.Cursor
	}
	return env
}
