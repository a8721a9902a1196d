package routerapi

import (
	"testing"
	"time"
)

func TestConfigDefaultsAndEndpoint(t *testing.T) {
	var c Config
	c.SetDefaults()
	if c.Timeout != DefaultTimeout || c.Enabled {
		t.Fatalf("defaults %+v", c)
	}
	c.Host, c.Port, c.SSL, c.User, c.Password = "core.lan", 443, true, "ro", "pw"
	e := c.Endpoint()
	if e.Host != "core.lan" || e.Port != 443 || !e.SSL || e.User != "ro" || e.Secret != "pw" || e.SecretKey != "password" ||
		e.DefaultPort != 80 || e.DefaultTLSPort != 443 || e.Timeout != 10*time.Second {
		t.Fatalf("endpoint %+v", e)
	}
}
