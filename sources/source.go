package sources

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// ScanInfo are the facts every result has, whatever its kind: what the
// scan log shows of it.
type ScanInfo struct {
	ID       string
	Started  time.Time
	Finished time.Time
	// Complete is false for a read cut short or partly failed: such a
	// result is never evidence that something is gone.
	Complete bool
	Errors   []string
}

// Result is what one run of a source produced: *Sweep, *PortScan, and the
// plugins' reads to come. The sink turns each into one event.
type Result interface {
	Scan() ScanInfo
}

// Scan implements Result.
func (s *Sweep) Scan() ScanInfo {
	return ScanInfo{ID: s.ScanID, Started: s.Started, Finished: s.Finished, Complete: s.Complete, Errors: s.Errors}
}

// Scan implements Result.
func (p *PortScan) Scan() ScanInfo {
	return ScanInfo{ID: p.ScanID, Started: p.Started, Finished: p.Finished, Complete: p.Complete, Errors: p.Errors}
}

// Poller is a source read on a schedule: one Poll is one read.
//
// Poll returns promptly once ctx is done (cancelled, or past the run's
// timeout), with what it has marked incomplete and ctx's error, or with
// a nil Result and the error. A nil Result with a nil error means there
// was nothing to do this round (a port scan with no known address yet);
// nothing is recorded then. Any other failure returns the error (and a
// partial result when there is one): the scheduler records it as a
// failed scan with the error as reason, so an error text must carry no
// secret. Poll is called from one goroutine at a time and leaves no
// goroutine behind when it returns.
type Poller interface {
	Poll(ctx context.Context) (Result, error)
}

// Listener is a source that runs until stopped (a flow listener): it
// hands over one Result per window to emit, never one per packet.
//
// Listen returns nil once ctx is done (closing its sockets so that
// blocked reads return), or an error when it cannot go on. emit may be
// called from one goroutine at a time, and never after Listen returns.
type Listener interface {
	Listen(ctx context.Context, emit func(Result)) error
}

// Instance is one configured source: a kind's instance with its schedule.
// Exactly one of Poller and Listener is set.
type Instance struct {
	// Source names the instance in the log and the scan log:
	// "sweep:<host>", "portscan:<host>", "routerapi:<instance>".
	Source string
	// Kind is the kind's registered name.
	Kind string
	// Interval is the time between the starts of two polls, and Timeout
	// the longest one poll may take (0: no limit beyond the interval).
	Interval, Timeout time.Duration
	// WaitReady delays the first poll until the read models have caught
	// up with the log (a source that reads them, like the port scan).
	WaitReady bool
	Poller    Poller
	Listener  Listener
}

// Run is the outcome of one run of an instance, as a sink records it:
// its Result, or when Result is nil, the reason Err it produced nothing.
// Err may also be set beside a Result (a partial read).
type Run struct {
	Instance Instance
	Started  time.Time
	Finished time.Time
	Result   Result
	Err      error
}

// KnownAddress is a current address of a device the inventory knows, with
// the ports the device advertises (DNS-SD), for sources that probe known
// devices (the port scan).
type KnownAddress struct {
	IP    netip.Addr
	Ports []uint16
}

// Env is what a kind's Build gets from the service.
type Env struct {
	// Host is this host's name (the default source names use it).
	Host string
	// Decode decodes the settings at a configuration key ("scan.devices",
	// "plugins.routerapi.core") into into, a struct whose yaml tags name
	// the keys (the kind's own Config). The loader has already validated
	// them.
	Decode func(key string, into any) error
	// Enabled lists, in name order, the instances under a key of kind
	// instances ("plugins.routerapi") that have enabled: true.
	Enabled func(key string) []string
	// Known lists the current addresses the inventory knows.
	Known func(ctx context.Context) ([]KnownAddress, error)
	// Log is the service's logger; a kind adds its own attributes.
	Log *slog.Logger
	// Cursor returns the restart point the log holds for a source (the
	// cursor of its last recorded read, see DNSRead), "" when it has
	// none. The instances that use it wait for the read models
	// (Instance.WaitReady). Nil: no source has one.
	Cursor func(ctx context.Context, source string) (string, error)
}

// Kind is one source kind of the registration list (sources/builtin).
type Kind struct {
	// Name is the kind's name, as in the configuration and in Instance.Kind.
	Name string
	// Listener says the kind runs until stopped rather than on a schedule.
	Listener bool
	// Doc says in one line what the kind reads.
	Doc string
	// Build returns the kind's enabled instances from env (none when the
	// kind is off) and warnings to log (a password sent as plain text).
	// nil for a kind of the contract that this build accepts in its
	// configuration but has no source for yet.
	Build func(env Env) (instances []Instance, warnings []string, err error)
	// Key is the configuration key of the kind's instances, for a kind
	// without Build ("plugins.routerapi"): each enabled instance there is
	// reported as not read.
	Key string
}

// Endpoint is the connection of a plugin instance read over HTTP(S), the
// part every such kind shares (host, port, ssl, insecure, timeout,
// credentials). Each kind's Config gives its own through Endpoint().
type Endpoint struct {
	Host     string
	Port     int // the effective port after loading
	SSL      bool
	Insecure bool
	Timeout  time.Duration
	User     string
	// Secret is the password or token, and SecretKey its key ("password",
	// "token"). Without SSL it travels as plain text: the loader warns.
	Secret    string
	SecretKey string
	// DefaultPort and DefaultTLSPort are the kind's ports when none is set.
	DefaultPort, DefaultTLSPort int
}
