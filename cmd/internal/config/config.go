package config

import (
	"net/netip"
	"path/filepath"
	"time"

	"github.com/jocasta/jocasta/projections/notify/httpnotify"
	"github.com/jocasta/jocasta/projections/notify/push"
	"github.com/jocasta/jocasta/projections/notify/webhook"
	"github.com/jocasta/jocasta/sources/devicesweep"
	"github.com/jocasta/jocasta/sources/dnsfilter1"
	"github.com/jocasta/jocasta/sources/dnsfilter2"
	"github.com/jocasta/jocasta/sources/dnsnode"
	"github.com/jocasta/jocasta/sources/flowlistener"
	"github.com/jocasta/jocasta/sources/portscan"
	"github.com/jocasta/jocasta/sources/routerapi"
	"github.com/jocasta/jocasta/sources/rpcrouter"
)

// Config is the whole configuration of the service, one field per key of the
// contract. The yaml tag of each field is its key; the struct is the schema:
// unknown-key detection, environment mapping, the starter file and the tests
// are all derived from it (see schema.go), so a key exists in exactly one
// place. A cfg tag marks secrets ("secret"), URLs whose credentials are
// redacted ("url") and address lists that also take bare addresses
// ("bare-addr").
type Config struct {
	Server    Server            `yaml:"server"`
	DB        DB                `yaml:"db"`
	Logger    Logger            `yaml:"logger"`
	Inventory Inventory         `yaml:"inventory"`
	Retention Retention         `yaml:"retention"`
	Location  Location          `yaml:"location"`
	Networks  []netip.Prefix    `yaml:"networks"`
	Scan      Scan              `yaml:"scan"`
	Plugins   Plugins           `yaml:"plugins"`
	Notify    map[string]Notify `yaml:"notify"`
	Sensors   Sensors           `yaml:"sensors"`
	Sensor    Sensor            `yaml:"sensor"`

	// Warnings are accepted oddities worth logging at start, such as an
	// unknown logger.level (which the contract says logs at info). Each is
	// one line with its file:line or variable, like a Problem.
	Warnings []string `yaml:"-"`
}

// Server is the HTTP server: JSON API, web interface and MCP endpoint.
type Server struct {
	Host           string         `yaml:"host"`                            // default localhost
	Port           int            `yaml:"port"`                            // default 8080; 1..65535
	TrustedProxies []netip.Prefix `yaml:"trusted_proxies" cfg:"bare-addr"` // a bare address is its /32 or /128
	ProxyHeader    string         `yaml:"proxy_header"`                    // x-forwarded-for (default), forwarded or x-real-ip
	// BaseURL is the address people reach the web interface at (behind a
	// proxy, the proxy's): push notifications link to devices there, and
	// serve's ready line names it. Empty: no links in notifications (the
	// ready line names the listening address). No path, no trailing
	// slash.
	BaseURL string `yaml:"base_url"`
	CORS    CORS   `yaml:"cors"`
	Auth    Auth   `yaml:"auth"`
	MCP     MCP    `yaml:"mcp"`
}

// CORS lists browser origins besides the server's own that may read /api.
type CORS struct {
	AllowedOrigins []string `yaml:"allowed_origins"` // scheme://host[:port], lower-cased
}

// Auth holds the web sign-in session settings.
type Auth struct {
	SessionLifetime Duration `yaml:"session_lifetime"` // default 168h; > 0
	IdleTimeout     Duration `yaml:"idle_timeout"`     // default 24h; > 0
	CookieSecure    bool     `yaml:"cookie_secure"`    // default true
}

// MCP switches the MCP endpoint at /mcp.
type MCP struct {
	Enabled bool `yaml:"enabled"` // default false
}

// DB locates the database file.
type DB struct {
	Path string `yaml:"path"` // directory, default "."
	Name string `yaml:"name"` // file name, default jocasta.db
}

// Logger holds the effective log settings: Level is one of debug, info,
// warn, error and Format is json or text (other values are replaced and
// reported in Config.Warnings, as the contract says they log at info / as JSON).
type Logger struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Inventory holds the presence and address rules.
type Inventory struct {
	OnlineWindow Duration `yaml:"online_window"` // default 15m; > 0
	AddressGrace Duration `yaml:"address_grace"` // default 6h; ≥ 0
}

// Retention holds how long each kind of record is kept; 0 keeps it forever.
type Retention struct {
	History Duration `yaml:"history"` // default 2160h
	Traffic Duration `yaml:"traffic"` // default 720h
	DNS     Duration `yaml:"dns"`     // default 720h
	Devices Duration `yaml:"devices"` // default 2160h
}

// Location holds the map country and the display time zone.
type Location struct {
	Country  string `yaml:"country"`  // "" or two upper-case letters
	Timezone string `yaml:"timezone"` // "" or an IANA zone name that time.LoadLocation knows
	// CountryDB is an IP → country database in the MaxMind DB format
	// that replaces the embedded one (a newer or licensed database).
	CountryDB string `yaml:"country_db"`
}

// Scan holds the interval sweep and port scan settings.
type Scan struct {
	Source  string      `yaml:"source"` // "" means "sweep:<hostname>", see ScanSource
	Devices ScanDevices `yaml:"devices"`
	Ports   ScanPorts   `yaml:"ports"`
}

// The sweep and the port scan own their settings types; aliases keep the
// loader's names. Their defaults are in Defaults below; the loader checks
// their ranges.
type (
	ScanDevices = devicesweep.Settings // scan.devices
	ScanPorts   = portscan.Settings    // scan.ports
)

// Plugins holds the plugin instances of each kind, keyed by instance name
// (lower-case letters, digits, '-' and '_'; see doc.go). Every instance is off
// unless Enabled.
type Plugins struct {
	RouterAPI    map[string]RouterAPI    `yaml:"routerapi"`
	RPCRouter    map[string]RPCRouter    `yaml:"rpcrouter"`
	FlowListener map[string]FlowListener `yaml:"flowlistener"`
	DNSNode      map[string]DNSNode      `yaml:"dnsnode"`
	DNSFilter1   map[string]DNSFilter1   `yaml:"dnsfilter1"`
	DNSFilter2   map[string]DNSFilter2   `yaml:"dnsfilter2"`
}

// The plugin kinds own their instance types (sources/<kind>.Config); the
// loader composes them. Aliases keep the loader's names.
type (
	RouterAPI    = routerapi.Config
	RPCRouter    = rpcrouter.Config
	FlowListener = flowlistener.Config
	DNSNode      = dnsnode.Config
	DNSFilter1   = dnsfilter1.Config
	DNSFilter2   = dnsfilter2.Config
)

// Notify is one notification destination. Exactly one of Push, Webhook and
// HTTP is non-nil in an enabled destination after Load.
type Notify struct {
	Enabled bool     `yaml:"enabled"` // default true
	Timeout Duration `yaml:"timeout"` // default 10s; > 0
	Push    *Push    `yaml:"push"`
	Webhook *Webhook `yaml:"webhook"`
	HTTP    *HTTP    `yaml:"http"`
}

// The delivery channels own their blocks' types; aliases keep the
// loader's names.
type (
	Push    = push.Config
	Webhook = webhook.Config
	HTTP    = httpnotify.Config
)

// Defaults returns the configuration used when no file and no SVC_ variable
// sets anything: every default of the contract. Lists and maps are nil.
func Defaults() Config {
	return Config{
		Server: Server{
			Host:        "localhost",
			Port:        8080,
			ProxyHeader: "x-forwarded-for",
			Auth: Auth{
				SessionLifetime: Duration(168 * time.Hour),
				IdleTimeout:     Duration(24 * time.Hour),
				CookieSecure:    true,
			},
		},
		DB:      DB{Path: ".", Name: "jocasta.db"},
		Sensors: defaultSensors(),
		Logger:  Logger{Level: "info", Format: "json"},
		Inventory: Inventory{
			OnlineWindow: Duration(15 * time.Minute),
			AddressGrace: Duration(6 * time.Hour),
		},
		Retention: Retention{
			History: Duration(2160 * time.Hour),
			Traffic: Duration(720 * time.Hour),
			DNS:     Duration(720 * time.Hour),
			Devices: Duration(2160 * time.Hour),
		},
		Scan: Scan{
			Devices: ScanDevices{
				Enabled:        true,
				Interval:       5 * time.Minute,
				Rate:           1000,
				Rounds:         2,
				Wait:           2 * time.Second,
				ResolveNames:   true,
				ResolveMACs:    true,
				ResolveMDNS:    true,
				ResolveNetBIOS: true,
				ResolveDNSSD:   true,
				ResolveSSDP:    true,
			},
			Ports: ScanPorts{
				Interval:    6 * time.Hour,
				Concurrency: 64,
			},
		},
	}
}

// defaultTimeout is the plugin and notify timeout default.
const defaultTimeout = Duration(10 * time.Second)

// instance is implemented by the value types of every instance map (plugin
// kinds and notify destinations). SetDefaults fills the defaults of a new
// instance before its keys are decoded; the port default, which depends on
// ssl, is filled after decoding by the validator.
type instance interface {
	SetDefaults()
}

func (n *Notify) SetDefaults() { n.Enabled = true; n.Timeout = defaultTimeout }

// DBFile is the path of the database file: db.path joined with db.name.
func (c *Config) DBFile() string { return filepath.Join(c.DB.Path, c.DB.Name) }

// SocketPath is the path of the control socket: jocasta.sock in db.path.
func (c *Config) SocketPath() string { return filepath.Join(c.DB.Path, "jocasta.sock") }

// ScanSource is the source name of the interval sweeps: scan.source, or
// "sweep:" followed by hostname when scan.source is empty.
func (c *Config) ScanSource(hostname string) string {
	if c.Scan.Source != "" {
		return c.Scan.Source
	}
	return "sweep:" + hostname
}
