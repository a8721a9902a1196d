package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sensors is the central's side of remote sites (sensors.*): the NATS
// server the sensors publish to (an existing one, or one the service
// runs itself) and the sensor names whose observations it appends.
type Sensors struct {
	Enabled bool `yaml:"enabled"` // default false
	// Names are the sensors allowed; another name's messages are refused.
	Names []string    `yaml:"names"`
	NATS  SensorsNATS `yaml:"nats"`
}

// SensorsNATS is where the central reads the sensors' stream: the
// server at URL, or with URL empty an embedded one.
type SensorsNATS struct {
	NATSClient `yaml:",inline"`
	Embedded   EmbeddedNATS `yaml:"embedded"`
}

// NATSClient is a connection to a NATS server: the central's to an
// existing server, or a sensor's to the central.
type NATSClient struct {
	URL             string `yaml:"url" cfg:"url"`
	CredentialsFile string `yaml:"credentials_file"`
	User            string `yaml:"user"`
	Password        string `yaml:"password" cfg:"secret"`
	TLSCA           string `yaml:"tls_ca"`
	TLSCert         string `yaml:"tls_cert"`
	TLSKey          string `yaml:"tls_key"`
	Insecure        bool   `yaml:"insecure"`
}

// EmbeddedNATS is the NATS server with JetStream the central runs when
// sensors.nats.url is empty.
type EmbeddedNATS struct {
	Listen   string `yaml:"listen"` // default 0.0.0.0:4222
	User     string `yaml:"user"`
	Password string `yaml:"password" cfg:"secret"`
	// Sensors gives a sensor its own password: it connects as the user
	// of its name, which may publish only on its own subject.
	Sensors map[string]EmbeddedSensor `yaml:"sensors"`
	TLSCert string                    `yaml:"tls_cert"`
	TLSKey  string                    `yaml:"tls_key"`
	// StoreDir holds JetStream's files; default <db.path>/nats.
	StoreDir string `yaml:"store_dir"`
}

// EmbeddedSensor is one sensor's own credentials on the embedded server.
type EmbeddedSensor struct {
	Password string `yaml:"password" cfg:"secret"`
}

// SensorPasswords maps each sensor with its own password to it.
func (e EmbeddedNATS) SensorPasswords() map[string]string {
	if len(e.Sensors) == 0 {
		return nil
	}
	out := make(map[string]string, len(e.Sensors))
	for name, s := range e.Sensors {
		out[name] = s.Password
	}
	return out
}

// Sensor is this process as a sensor (`jocasta sensor`): its name, its
// link to the central's NATS server, and its outbox.
type Sensor struct {
	Name string     `yaml:"name"`
	NATS NATSClient `yaml:"nats"`
	// Outbox is the file observations wait in; default
	// <db.path>/sensor-outbox.db.
	Outbox string `yaml:"outbox"`
}

func defaultSensors() Sensors {
	return Sensors{NATS: SensorsNATS{Embedded: EmbeddedNATS{Listen: "0.0.0.0:4222"}}}
}

// NATSStoreDir is the embedded server's JetStream directory.
func (c *Config) NATSStoreDir() string {
	if c.Sensors.NATS.Embedded.StoreDir != "" {
		return c.Sensors.NATS.Embedded.StoreDir
	}
	return filepath.Join(c.DB.Path, "nats")
}

// SensorOutbox is the sensor's outbox file.
func (c *Config) SensorOutbox() string {
	if c.Sensor.Outbox != "" {
		return c.Sensor.Outbox
	}
	return filepath.Join(c.DB.Path, "sensor-outbox.db")
}

// validateSensors checks sensors.* and sensor.*. The keys `jocasta
// sensor` needs (sensor.name, sensor.nats.url) are required by that
// command, not here.
func (l *loader) validateSensors(c *Config) {
	s := &c.Sensors
	seen := map[string]bool{}
	for i, n := range s.Names {
		path := fmt.Sprintf("sensors.names[%d]", i)
		if msg := checkName(n); !l.check(path, msg == "", msg) {
			continue
		}
		l.check(path, !seen[n], fmt.Sprintf("sensor %q is listed twice", n))
		seen[n] = true
	}
	if s.Enabled {
		l.check("sensors.names", len(s.Names) > 0, "list the sensor names allowed to send (sensors.names: [site-a]), or set sensors.enabled: false")
	}
	l.natsClient("sensors.nats", s.NATS.NATSClient)
	if s.Enabled && s.NATS.URL == "" {
		e := s.NATS.Embedded
		l.listenAddr("sensors.nats.embedded.listen", e.Listen)
		if e.User != "" || len(e.Sensors) == 0 {
			l.check("sensors.nats.embedded.user", e.User != "", "the embedded server takes sensors with a password: give each sensor its own (sensors.nats.embedded.sensors.<name>.password), or set a shared sensors.nats.embedded.user and password (or sensors.nats.url for an existing server)")
			l.check("sensors.nats.embedded.user", e.User != "jocasta-central", `"jocasta-central" is the embedded server's user for the service itself: choose another name for the sensors`)
			l.check("sensors.nats.embedded.user", e.Sensors[e.User] == (EmbeddedSensor{}), fmt.Sprintf("%q has its own password under sensors.nats.embedded.sensors: choose another name for the shared user", e.User))
			l.check("sensors.nats.embedded.password", e.Password != "", "set sensors.nats.embedded.password, the password sensors connect with")
		}
		for _, name := range slices.Sorted(maps.Keys(e.Sensors)) {
			path := "sensors.nats.embedded.sensors." + name
			l.check(path, slices.Contains(s.Names, name), fmt.Sprintf("%q is not in sensors.names: add it there, or remove its password", name))
			l.check(path, name != "jocasta-central", `"jocasta-central" is the embedded server's user for the service itself: name the sensor otherwise`)
			l.check(path+".password", e.Sensors[name].Password != "", "set the password this sensor connects with (its user is its name)")
		}
		l.pair("sensors.nats.embedded", e.TLSCert, e.TLSKey)
	}
	if c.Sensor.Name != "" {
		msg := checkName(c.Sensor.Name)
		l.check("sensor.name", msg == "", msg)
	}
	l.natsClient("sensor.nats", c.Sensor.NATS)
}

// natsClient checks a connection block.
func (l *loader) natsClient(path string, n NATSClient) {
	if n.URL != "" {
		l.check(path+".url", natsURLProblem(n.URL) == "", natsURLProblem(n.URL))
	}
	l.check(path+".password", n.Password == "" || n.User != "", "a password needs a user: set "+path+".user")
	l.check(path+".credentials_file", n.CredentialsFile == "" || n.User == "", "use either a credentials file or a user and password, not both")
	l.pair(path, n.TLSCert, n.TLSKey)
}

// pair checks that tls_cert and tls_key go together.
func (l *loader) pair(path, cert, key string) {
	l.check(path+".tls_key", (cert == "") == (key == ""), "tls_cert and tls_key go together: set both or neither")
}

// listenAddr checks a host:port listen address.
func (l *loader) listenAddr(path, a string) {
	host, port, err := net.SplitHostPort(a)
	n, perr := strconv.Atoi(port)
	ok := err == nil && perr == nil && n >= 0 && n <= 65535 && (host == "" || hostProblem(host, path) == "")
	l.check(path, ok, fmt.Sprintf("want host:port such as 0.0.0.0:4222, got %q", a))
}

// natsURLProblem checks a NATS URL list; the value is never echoed (it
// may hold a password).
func natsURLProblem(raw string) string {
	for part := range strings.SplitSeq(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, strings.ToLower(u.Scheme)) {
			return "want nats://host:port or tls://host:port (several comma separated); the value is not shown: it may hold a password"
		}
	}
	return ""
}

// sensorKeyDocs documents the sensors.* and sensor.* keys.
func sensorKeyDocs() map[string]keyDoc {
	client := func(prefix, whose string) map[string]keyDoc {
		return map[string]keyDoc{
			prefix:                       {doc: whose},
			prefix + ".url":              {doc: "The NATS server's URL.", def: "empty", allowed: "nats://host:port or tls://host:port, several comma separated"},
			prefix + ".credentials_file": {doc: "A NATS .creds file (user JWT and nkey seed), for a server run with accounts.", allowed: "a readable file path"},
			prefix + ".user":             {doc: "User name, for a server that takes a user and password.", allowed: "any"},
			prefix + ".password":         {doc: "The user's password.", allowed: "any"},
			prefix + ".tls_ca":           {doc: "CA bundle that verifies the server's certificate. Empty: the system's.", allowed: "a PEM file path"},
			prefix + ".tls_cert":         {doc: "Client certificate, for a server that asks for one (with tls_key).", allowed: "a PEM file path"},
			prefix + ".tls_key":          {doc: "The client certificate's key.", allowed: "a PEM file path"},
			prefix + ".insecure":         {doc: "Skips the server certificate's checks.", allowed: "true, false"},
		}
	}
	docs := map[string]keyDoc{
		"sensors":                                  {doc: "Remote sites: sensors (jocasta sensor) publish their observations over NATS JetStream and this service appends them with source sensor:<name>. A sensor silent for 3 times its interval makes its devices not covered, never offline. See docs/sensors.md."},
		"sensors.enabled":                          {doc: "Consumes the sensors' stream.", allowed: "true, false"},
		"sensors.names":                            {doc: "The sensors allowed to send. Messages from any other name are refused and logged.", def: "empty", allowed: "a list of names (lower-case letters, digits, - and _)"},
		"sensors.nats.embedded":                    {doc: "The NATS server with JetStream the service runs itself when sensors.nats.url is empty."},
		"sensors.nats.embedded.listen":             {doc: "Where sensors connect.", allowed: "host:port"},
		"sensors.nats.embedded.user":               {doc: "A user every sensor may connect with. It may only publish on the sensors' subjects (jocasta-sensors.*), but on any sensor's: whoever holds its password can send as any name (prefer sensors.nats.embedded.sensors). The service connects in-process as its own user.", def: "required when enabled with no url and no sensors.nats.embedded.sensors", allowed: "any but jocasta-central and the names under sensors.nats.embedded.sensors"},
		"sensors.nats.embedded.password":           {doc: "Its password.", def: "required with user", allowed: "any"},
		"sensors.nats.embedded.sensors":            {doc: "A password of its own per sensor: the sensor connects with its name as the user (sensor.nats.user) and this password, and may publish only on its own subject (jocasta-sensors.<name>), so its password cannot send as another sensor. From the environment: SVC_SENSORS__NATS__EMBEDDED__SENSORS__<NAME>__PASSWORD.", def: "empty", allowed: "names from sensors.names"},
		"sensors.nats.embedded.sensors.*":          {doc: "A sensor of sensors.names, by its name."},
		"sensors.nats.embedded.sensors.*.password": {doc: "The sensor's password.", def: "required", allowed: "any"},
		"sensors.nats.embedded.tls_cert":           {doc: "Server certificate: with it (and tls_key) sensors must connect with TLS.", allowed: "a PEM file path"},
		"sensors.nats.embedded.tls_key":            {doc: "The server certificate's key.", allowed: "a PEM file path"},
		"sensors.nats.embedded.store_dir":          {doc: "Where JetStream keeps the messages not yet appended.", def: "<db.path>/nats", allowed: "a directory"},
		"sensor":                                   {doc: "This process as a sensor at a remote site (jocasta sensor --config FILE): its sweeps, port scans and plugins of this file go to the central instead of a local log."},
		"sensor.name":                              {doc: "The sensor's name, one of the central's sensors.names.", def: "required by jocasta sensor", allowed: "lower-case letters, digits, - and _"},
		"sensor.outbox":                            {doc: "File where observations wait until the central's NATS server has them.", def: "<db.path>/sensor-outbox.db", allowed: "a file path"},
	}
	for k, v := range client("sensors.nats", "The central's NATS server. With url set, the service reads the sensors' stream from that existing server (JetStream enabled); with url empty it runs the embedded server.") {
		docs[k] = v
	}
	for k, v := range client("sensor.nats", "The link to the central's NATS server.") {
		docs[k] = v
	}
	docs["sensor.nats.url"] = keyDoc{doc: "The central's NATS server.", def: "required by jocasta sensor", allowed: "nats://host:port or tls://host:port, several comma separated"}
	return docs
}
