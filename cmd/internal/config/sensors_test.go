package config

import (
	"strings"
	"testing"
)

// sensorDefaults are TestDefaults' rows for sensors.* and sensor.*.
func sensorDefaults(c *Config) []struct {
	key       string
	got, want any
} {
	s, n := c.Sensors, c.Sensor
	return []struct {
		key       string
		got, want any
	}{
		{"sensors.enabled", s.Enabled, false},
		{"sensors.names", len(s.Names), 0},
		{"sensors.nats.url", s.NATS.URL, ""},
		{"sensors.nats.credentials_file", s.NATS.CredentialsFile, ""},
		{"sensors.nats.user", s.NATS.User, ""},
		{"sensors.nats.password", s.NATS.Password, ""},
		{"sensors.nats.tls_ca", s.NATS.TLSCA, ""},
		{"sensors.nats.tls_cert", s.NATS.TLSCert, ""},
		{"sensors.nats.tls_key", s.NATS.TLSKey, ""},
		{"sensors.nats.insecure", s.NATS.Insecure, false},
		{"sensors.nats.embedded.listen", s.NATS.Embedded.Listen, "0.0.0.0:4222"},
		{"sensors.nats.embedded.user", s.NATS.Embedded.User, ""},
		{"sensors.nats.embedded.password", s.NATS.Embedded.Password, ""},
		{"sensors.nats.embedded.tls_cert", s.NATS.Embedded.TLSCert, ""},
		{"sensors.nats.embedded.tls_key", s.NATS.Embedded.TLSKey, ""},
		{"sensors.nats.embedded.store_dir", s.NATS.Embedded.StoreDir, ""},
		{"sensors.nats.embedded.sensors", len(s.NATS.Embedded.Sensors), 0},
		{"sensor.name", n.Name, ""},
		{"sensor.nats.url", n.NATS.URL, ""},
		{"sensor.nats.credentials_file", n.NATS.CredentialsFile, ""},
		{"sensor.nats.user", n.NATS.User, ""},
		{"sensor.nats.password", n.NATS.Password, ""},
		{"sensor.nats.tls_ca", n.NATS.TLSCA, ""},
		{"sensor.nats.tls_cert", n.NATS.TLSCert, ""},
		{"sensor.nats.tls_key", n.NATS.TLSKey, ""},
		{"sensor.nats.insecure", n.NATS.Insecure, false},
		{"sensor.outbox", n.Outbox, ""},
	}
}

func TestSensorsKeys(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		wantErr    []string // substrings of the error, nil: loads
	}{
		{name: "embedded", yaml: "sensors: {enabled: true, names: [site-a, site-b], nats: {embedded: {listen: '127.0.0.1:4333', user: central, password: pw}}}"},
		{name: "existing server", yaml: "sensors: {enabled: true, names: [a], nats: {url: 'tls://nats.example:4222', credentials_file: /etc/c.creds, tls_ca: /etc/ca.pem}}"},
		{name: "a sensor", yaml: "sensor: {name: site-a, outbox: /var/lib/o.db, nats: {url: 'nats://c.example:4222', user: s, password: pw}}"},
		{name: "from the environment", env: []string{"SVC_SENSOR__NAME=site-a", "SVC_SENSOR__NATS__URL=nats://c:4222"}},
		{name: "off: nothing required", yaml: "sensors: {enabled: false}"},
		{name: "no names", yaml: "sensors: {enabled: true, nats: {embedded: {user: u, password: p}}}", wantErr: []string{"sensors.names"}},
		{name: "bad and twice listed names", yaml: "sensors: {names: [Site A, b, b]}", wantErr: []string{"sensors.names[0]", "bad name", "sensors.names[2]", "listed twice"}},
		{name: "embedded without credentials", yaml: "sensors: {enabled: true, names: [a]}", wantErr: []string{"sensors.nats.embedded.user", "sensors.nats.embedded.password"}},
		{name: "the central's own user", yaml: "sensors: {enabled: true, names: [a], nats: {embedded: {user: jocasta-central, password: p}}}", wantErr: []string{"sensors.nats.embedded.user", "choose another name"}},
		{name: "bad listen", yaml: "sensors: {enabled: true, names: [a], nats: {embedded: {listen: '4222', user: u, password: p}}}", wantErr: []string{"sensors.nats.embedded.listen", "host:port"}},
		{name: "http url, not shown", yaml: "sensor: {nats: {url: 'http://u:secretpw@x'}}", wantErr: []string{"sensor.nats.url", "nats://"}},
		{name: "password without user", yaml: "sensor: {nats: {url: 'nats://x:1', password: p}}", wantErr: []string{"sensor.nats.password", "needs a user"}},
		{name: "creds and user", yaml: "sensors: {nats: {credentials_file: /c, user: u}}", wantErr: []string{"sensors.nats.credentials_file", "not both"}},
		{name: "cert without key", yaml: "sensor: {nats: {tls_cert: /c.pem}}", wantErr: []string{"sensor.nats.tls_key", "together"}},
		{name: "bad sensor name", yaml: "sensor: {name: 'Site_A!'}", wantErr: []string{"sensor.name", "bad name"}},
		{name: "a password per sensor, no shared user", yaml: "sensors: {enabled: true, names: [site-a, site-b], nats: {embedded: {sensors: {site-a: {password: pa}, site-b: {password: pb}}}}}"},
		{name: "a password per sensor beside a shared user", yaml: "sensors: {enabled: true, names: [site-a, site-b], nats: {embedded: {user: shared, password: p, sensors: {site-a: {password: pa}}}}}"},
		{name: "a password per sensor from the environment", env: []string{"SVC_SENSORS__ENABLED=true", "SVC_SENSORS__NAMES=site_a", "SVC_SENSORS__NATS__EMBEDDED__SENSORS__SITE_A__PASSWORD=pa"}},
		{name: "a sensor's password for a name not listed", yaml: "sensors: {enabled: true, names: [a], nats: {embedded: {sensors: {a: {password: pa}, b: {password: secretpw}}}}}",
			wantErr: []string{"sensors.nats.embedded.sensors.b", "not in sensors.names"}},
		{name: "a sensor without its password", yaml: "sensors: {enabled: true, names: [a], nats: {embedded: {sensors: {a: {}}}}}",
			wantErr: []string{"sensors.nats.embedded.sensors.a.password", "set the password"}},
		{name: "the shared user named as a sensor", yaml: "sensors: {enabled: true, names: [a], nats: {embedded: {user: a, password: p, sensors: {a: {password: secretpw}}}}}",
			wantErr: []string{"sensors.nats.embedded.user", "has its own password"}},
		{name: "a sensor named as the central's user", yaml: "sensors: {enabled: true, names: [jocasta-central], nats: {embedded: {sensors: {jocasta-central: {password: secretpw}}}}}",
			wantErr: []string{"sensors.nats.embedded.sensors.jocasta-central", "name the sensor otherwise"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml+"\n", tc.env...)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error naming %v", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "secretpw") {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
}
