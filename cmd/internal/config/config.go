package config

import (
	"net/netip"
	"path/filepath"
	"time"
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
	CORS           CORS           `yaml:"cors"`
	Auth           Auth           `yaml:"auth"`
	MCP            MCP            `yaml:"mcp"`
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
}

// Scan holds the interval sweep and port scan settings.
type Scan struct {
	Source  string      `yaml:"source"` // "" means "sweep:<hostname>", see ScanSource
	Devices ScanDevices `yaml:"devices"`
	Ports   ScanPorts   `yaml:"ports"`
}

// ScanDevices is the periodic ICMP sweep.
type ScanDevices struct {
	Enabled        bool     `yaml:"enabled"`         // default true
	Interval       Duration `yaml:"interval"`        // default 5m; > 0
	Rate           int      `yaml:"rate"`            // default 1000; 1..1000000 probes per second
	Rounds         int      `yaml:"rounds"`          // default 2; 1..100
	Wait           Duration `yaml:"wait"`            // default 2s; ≥ 0
	ResolveNames   bool     `yaml:"resolve_names"`   // default true
	ResolveMACs    bool     `yaml:"resolve_macs"`    // default true
	ResolveMDNS    bool     `yaml:"resolve_mdns"`    // default true
	ResolveNetBIOS bool     `yaml:"resolve_netbios"` // default true
	ResolveDNSSD   bool     `yaml:"resolve_dnssd"`   // default true
	ResolveSSDP    bool     `yaml:"resolve_ssdp"`    // default true
}

// ScanPorts is the periodic TCP port scan.
type ScanPorts struct {
	Enabled     bool     `yaml:"enabled"`     // default false
	Interval    Duration `yaml:"interval"`    // default 6h; > 0
	Custom      string   `yaml:"custom"`      // "" = preset; else ParsePorts syntax
	Concurrency int      `yaml:"concurrency"` // default 64; 1..65535
}

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

// RouterAPI is a router, switch or access point read over a REST API.
// After Load, Port is the effective port (80, or 443 with SSL, unless set).
type RouterAPI struct {
	Enabled      bool     `yaml:"enabled"`
	Host         string   `yaml:"host"` // required when enabled; no port
	Port         int      `yaml:"port"`
	User         string   `yaml:"user"`
	Password     string   `yaml:"password" cfg:"secret"`
	SSL          bool     `yaml:"ssl"`
	Insecure     bool     `yaml:"insecure"`
	Timeout      Duration `yaml:"timeout"` // default 10s; > 0
	TopologyOnly bool     `yaml:"topology_only"`
}

// RPCRouter is a router or access point read over its JSON-RPC bus.
// After Load, Port is the effective port (80, or 443 with SSL, unless set).
type RPCRouter struct {
	Enabled      bool     `yaml:"enabled"`
	Host         string   `yaml:"host"` // required when enabled; no port
	Port         int      `yaml:"port"`
	User         string   `yaml:"user"`
	Password     string   `yaml:"password" cfg:"secret"`
	SSL          bool     `yaml:"ssl"`
	Insecure     bool     `yaml:"insecure"`
	Timeout      Duration `yaml:"timeout"` // default 10s; > 0
	TopologyOnly bool     `yaml:"topology_only"`
}

// FlowListener is a UDP listener for a router's flow exports.
type FlowListener struct {
	Enabled   bool         `yaml:"enabled"`
	Listen    string       `yaml:"listen"`    // default ":2055"; ":port" or "ip:port" ("[v6]:port")
	Exporters []netip.Addr `yaml:"exporters"` // required (non-empty) when enabled
}

// DNSNode is a DNS server node whose query log is read.
// After Load, Port is the effective port (5380, or 53443 with SSL, unless set).
type DNSNode struct {
	Enabled  bool     `yaml:"enabled"`
	Host     string   `yaml:"host"` // required when enabled; no port
	Port     int      `yaml:"port"`
	Token    string   `yaml:"token" cfg:"secret"`
	SSL      bool     `yaml:"ssl"`
	Insecure bool     `yaml:"insecure"`
	LogApp   string   `yaml:"log_app"`
	Timeout  Duration `yaml:"timeout"` // default 10s; > 0
}

// DNSFilter1 is a DNS filtering server (version 6 of its product line).
// After Load, Port is the effective port (80, or 443 with SSL, unless set).
type DNSFilter1 struct {
	Enabled  bool     `yaml:"enabled"`
	Host     string   `yaml:"host"` // required when enabled; no port
	Port     int      `yaml:"port"`
	Password string   `yaml:"password" cfg:"secret"`
	SSL      bool     `yaml:"ssl"`
	Insecure bool     `yaml:"insecure"`
	Timeout  Duration `yaml:"timeout"` // default 10s; > 0
}

// DNSFilter2 is a second DNS filtering server.
// After Load, Port is the effective port (80, or 443 with SSL, unless set).
type DNSFilter2 struct {
	Enabled  bool     `yaml:"enabled"`
	Host     string   `yaml:"host"` // required when enabled; no port
	Port     int      `yaml:"port"`
	User     string   `yaml:"user"`
	Password string   `yaml:"password" cfg:"secret"`
	SSL      bool     `yaml:"ssl"`
	Insecure bool     `yaml:"insecure"`
	Timeout  Duration `yaml:"timeout"` // default 10s; > 0
}

// Notify is one notification destination. Exactly one of Push, Webhook and
// HTTP is non-nil in an enabled destination after Load.
type Notify struct {
	Enabled bool     `yaml:"enabled"` // default true
	Timeout Duration `yaml:"timeout"` // default 10s; > 0
	Push    *Push    `yaml:"push"`
	Webhook *Webhook `yaml:"webhook"`
	HTTP    *HTTP    `yaml:"http"`
}

// Push publishes to a topic URL of a push-notification server.
type Push struct {
	URL      string `yaml:"url" cfg:"url"` // required; http(s)
	Token    string `yaml:"token" cfg:"secret"`
	Priority int    `yaml:"priority"` // 0..5; 0 leaves it to the server
}

// Webhook sends a signed JSON POST.
type Webhook struct {
	URL    string `yaml:"url" cfg:"url"`       // required; http(s)
	Secret string `yaml:"secret" cfg:"secret"` // required; "whsec_" + base64, or any other text
}

// HTTP sends a request whose body is a Go text/template (see BodyTemplate).
type HTTP struct {
	URL     string            `yaml:"url" cfg:"secret"`     // required; http(s); secret as a whole
	Headers map[string]string `yaml:"headers" cfg:"secret"` // values are secret
	Body    string            `yaml:"body"`                 // required; parses with BodyTemplate
}

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
		DB:     DB{Path: ".", Name: "jocasta.db"},
		Logger: Logger{Level: "info", Format: "json"},
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
				Interval:       Duration(5 * time.Minute),
				Rate:           1000,
				Rounds:         2,
				Wait:           Duration(2 * time.Second),
				ResolveNames:   true,
				ResolveMACs:    true,
				ResolveMDNS:    true,
				ResolveNetBIOS: true,
				ResolveDNSSD:   true,
				ResolveSSDP:    true,
			},
			Ports: ScanPorts{
				Interval:    Duration(6 * time.Hour),
				Concurrency: 64,
			},
		},
	}
}

// defaultTimeout is the plugin and notify timeout default.
const defaultTimeout = Duration(10 * time.Second)

// instance is implemented by the value types of every instance map (plugin
// kinds and notify destinations). setDefaults fills the defaults of a new
// instance before its keys are decoded; the port default, which depends on
// ssl, is filled after decoding by the validator.
type instance interface {
	setDefaults()
}

func (p *RouterAPI) setDefaults()    { p.Timeout = defaultTimeout }
func (p *RPCRouter) setDefaults()    { p.Timeout = defaultTimeout }
func (p *FlowListener) setDefaults() { p.Listen = ":2055" }
func (p *DNSNode) setDefaults()      { p.Timeout = defaultTimeout }
func (p *DNSFilter1) setDefaults()   { p.Timeout = defaultTimeout }
func (p *DNSFilter2) setDefaults()   { p.Timeout = defaultTimeout }
func (n *Notify) setDefaults()       { n.Enabled = true; n.Timeout = defaultTimeout }

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
