package dnsnode

import (
	"time"

	"github.com/jocasta/jocasta/sources"
)

// Defaults of an instance.
const (
	DefaultPort    = 5380
	DefaultTLSPort = 53443
	DefaultTimeout = 10 * time.Second
)

// Config is one instance (plugins.dnsnode.<name>). The yaml tags are its
// keys; a cfg tag marks a secret. The service's loader decodes it with
// file:line positions and checks the endpoint rules every kind shares.
type Config struct {
	Enabled                bool `yaml:"enabled"`
	sources.EndpointConfig `yaml:",inline"`
	Token                  string `yaml:"token" cfg:"secret"`
	LogApp                 string `yaml:"log_app"`
}

// SetDefaults fills the defaults of a new instance before its keys are
// decoded. The port's default depends on SSL and is filled after.
func (c *Config) SetDefaults() { c.Timeout = DefaultTimeout }

// Endpoint is the instance's connection, in the shape every kind read
// over HTTP(S) shares.
func (c Config) Endpoint() sources.Endpoint {
	return sources.Endpoint{Host: c.Host, Port: c.Port, SSL: c.SSL, Insecure: c.Insecure, Timeout: c.Timeout,
		User: "", Secret: c.Token, SecretKey: "token", DefaultPort: DefaultPort, DefaultTLSPort: DefaultTLSPort}
}
