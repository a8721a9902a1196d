package devicesweep

import "time"

// Settings are the scan.devices keys of the configuration. The package
// owns the type; the service's loader (cmd/internal/config) composes it,
// fills its defaults (enabled, 5m, 1000/s, 2 rounds, 2s, every resolver)
// and checks its ranges, each problem at its file:line.
type Settings struct {
	Enabled        bool          `yaml:"enabled"`
	Interval       time.Duration `yaml:"interval"`
	Rate           int           `yaml:"rate"`
	Rounds         int           `yaml:"rounds"`
	Wait           time.Duration `yaml:"wait"`
	ResolveNames   bool          `yaml:"resolve_names"`
	ResolveMACs    bool          `yaml:"resolve_macs"`
	ResolveMDNS    bool          `yaml:"resolve_mdns"`
	ResolveNetBIOS bool          `yaml:"resolve_netbios"`
	ResolveDNSSD   bool          `yaml:"resolve_dnssd"`
	ResolveSSDP    bool          `yaml:"resolve_ssdp"`
}
