package routerapi

import (
	"time"

	"github.com/jocasta/jocasta/sources"
)

// Defaults of an instance.
const (
	DefaultPort    = 80
	DefaultTLSPort = 443
	DefaultTimeout = 10 * time.Second
)

// Config is one instance (plugins.routerapi.<name>). The yaml tags are its
// keys; a cfg tag marks a secret. The service's loader decodes it with
// file:line positions and checks the endpoint rules every kind shares.
type Config struct {
	Enabled                bool `yaml:"enabled"`
	sources.EndpointConfig `yaml:",inline"`
	User                   string `yaml:"user"`
	Password               string `yaml:"password" cfg:"secret"`
	TopologyOnly           bool   `yaml:"topology_only"`
}

// SetDefaults fills the defaults of a new instance before its keys are
// decoded. The port's default depends on SSL and is filled after.
func (c *Config) SetDefaults() { c.Timeout = DefaultTimeout }

// Endpoint is the instance's connection, in the shape every kind read
// over HTTP(S) shares.
func (c Config) Endpoint() sources.Endpoint {
	return sources.Endpoint{Host: c.Host, Port: c.Port, SSL: c.SSL, Insecure: c.Insecure, Timeout: c.Timeout,
		User: c.User, Secret: c.Password, SecretKey: "password", DefaultPort: DefaultPort, DefaultTLSPort: DefaultTLSPort}
}
