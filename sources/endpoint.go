package sources

import "time"

// EndpointConfig is the connection part of a plugin instance's
// configuration that every kind read over HTTP(S) shares: each kind's
// Config embeds it inline (its keys sit beside the kind's own:
// plugins.<kind>.<name>.host), and adds its credentials and its own keys.
type EndpointConfig struct {
	Host     string        `yaml:"host"`     // required when enabled; no port
	Port     int           `yaml:"port"`     // after loading: the kind's port, or its TLS port with SSL, unless set
	SSL      bool          `yaml:"ssl"`      // HTTPS; without it a password or token travels as plain text
	Insecure bool          `yaml:"insecure"` // skip certificate checks (self-signed certificates)
	Timeout  time.Duration `yaml:"timeout"`  // the longest one read may take; > 0
}
