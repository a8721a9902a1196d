package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/traffic"
)

// Inventory is what the pages read of the inventory read model (the same
// methods the JSON API uses). It returns projections.ErrNotFound for an
// unknown device and projections.ErrBadCursor for a cursor it did not
// issue; every method is safe for concurrent use.
type Inventory interface {
	ListDevices(ctx context.Context, f projections.DeviceFilter) (projections.Page[projections.Device], error)
	Device(ctx context.Context, id string) (projections.Device, error)
	Groups(ctx context.Context) ([]projections.Group, error)
	Stats(ctx context.Context) (projections.Stats, error)
	ListEvents(ctx context.Context, f projections.EventFilter) (projections.Page[projections.ChangeEntry], error)
}

// ScanLog is what the Scans page reads (projections/scanlog).
type ScanLog interface {
	ListScans(ctx context.Context, f projections.ScanFilter) (projections.Page[projections.Scan], error)
}

// Accounts is what the pages read of the access read model
// (access.Projection).
type Accounts interface {
	// HasUsers reports whether any account exists.
	HasUsers() bool
	// CheckPassword verifies a password, with the same work for an
	// unknown name.
	CheckPassword(name, password string) bool
	// Session returns the live session of a cookie secret, or an error.
	Session(secret string) (access.Session, error)
	Sessions(now time.Time) []access.Session
	Users() []access.User
	Tokens(now time.Time) []projections.Token
	// TouchSession records a request of a session and reports whether
	// it had been idle longer than timeout (the session is then ended).
	TouchSession(id string, now time.Time, timeout time.Duration) (idle bool)
}

// Commander is the write side (events/command.Commander). Every mutation
// of the web interface goes through it, with the signed-in user as the
// actor.
type Commander interface {
	EditDevice(ctx context.Context, actor, id string, edit command.DeviceEdit) (projections.Device, error)
	SetWatch(ctx context.Context, actor, id string, watched bool) (projections.WatchState, error)
	CreateToken(ctx context.Context, source, actor string, req command.TokenRequest) (projections.Token, string, error)
	RevokeToken(ctx context.Context, source, actor, id string) error
	AddUser(ctx context.Context, source, actor, name, password string) error
	ChangePassword(ctx context.Context, source, actor, name, password string) error
	RemoveUser(ctx context.Context, source, actor, name string) error
	StartSession(ctx context.Context, user string, lifetime time.Duration) (access.Session, string, error)
	EndSession(ctx context.Context, actor, id, reason string) error
}

// Notifications is the notification destinations' read and write side,
// the same the API's /api/notifications uses: views from
// projections/notify (never a URL's path or query, a token or a secret),
// rules set through events/command with the given actor. It returns
// projections.ErrNotFound for a destination that is not configured,
// *command.Invalid for rules the write side refuses, notify.ErrNotDead
// from Redeliver for a record that is not dead.
type Notifications interface {
	Destinations(ctx context.Context) ([]notify.View, error)
	Destination(ctx context.Context, name string) (notify.View, error)
	SetRules(ctx context.Context, actor, name string, rules []events.NotifyRule) (notify.View, error)
	Ledger(ctx context.Context, name string, f notify.LedgerFilter) (projections.Page[notify.Record], error)
	Test(ctx context.Context, name string) (notify.Attempt, error)
	Redeliver(ctx context.Context, name, id string) (int, error)
}

// Traffic is the traffic read model (projections/traffic), the same the
// API's /api/traffic and /api/devices/{id}/traffic use.
type Traffic interface {
	DeviceTraffic(ctx context.Context, id string, f traffic.Filter) (projections.Page[traffic.Item], error)
	Overview(ctx context.Context, since, until time.Time, limit int) (traffic.Overview, error)
}

// Config is the part of the configuration the web interface uses.
type Config struct {
	// SessionLifetime (server.auth.session_lifetime) is how long a
	// sign-in lasts. Required, > 0.
	SessionLifetime time.Duration
	// IdleTimeout (server.auth.idle_timeout) ends a session unused this
	// long. Required, > 0.
	IdleTimeout time.Duration
	// CookieSecure (server.auth.cookie_secure) marks the session cookie
	// Secure (HTTPS only).
	CookieSecure bool
	// Location is the zone times are shown in (location.timezone); nil
	// means UTC.
	Location *time.Location
	// Settings is the effective configuration with every secret
	// redacted (what `jocasta config show` prints), for the Settings page.
	Settings string
	// SignInRate and SignInBurst limit sign-in attempts per client
	// address; AccountRate and AccountBurst per account name (0 =
	// defaults: 10 per minute, burst 10; 5 per minute, burst 10).
	SignInRate   rate.Limit
	SignInBurst  int
	AccountRate  rate.Limit
	AccountBurst int
}

// Validate checks the configuration; errors name the setting.
func (c Config) Validate() error {
	var errs []error
	if c.SessionLifetime <= 0 {
		errs = append(errs, fmt.Errorf("ui: server.auth.session_lifetime %v: must be above 0s", c.SessionLifetime))
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ui: server.auth.idle_timeout %v: must be above 0s", c.IdleTimeout))
	}
	if c.SignInRate < 0 || c.SignInBurst < 0 || c.AccountRate < 0 || c.AccountBurst < 0 {
		errs = append(errs, errors.New("ui: sign-in rate limits must not be negative"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.SignInRate == 0 {
		c.SignInRate = rate.Limit(10.0 / 60)
	}
	if c.SignInBurst == 0 {
		c.SignInBurst = 10
	}
	if c.AccountRate == 0 {
		c.AccountRate = rate.Limit(5.0 / 60)
	}
	if c.AccountBurst == 0 {
		c.AccountBurst = 10
	}
}

// zoneName names loc for people: "Local" (the system zone, when
// location.timezone is empty) is the zone's abbreviation now, with the TZ
// variable's name when it gives one.
func zoneName(loc *time.Location, now time.Time) string {
	if loc.String() != "Local" {
		return loc.String()
	}
	abbr, off := now.In(loc).Zone()
	if abbr == "" || abbr == "Local" {
		abbr = "UTC" + time.Unix(0, 0).In(time.FixedZone("", off)).Format("-07:00")
	}
	if tz := os.Getenv("TZ"); tz != "" && !strings.HasPrefix(tz, ":") {
		return tz + " (" + abbr + ")"
	}
	return "the system's time zone (" + abbr + ")"
}

// Deps are the behaviours the web interface uses. Inventory, Accounts
// and Commander are required; Setup is nil when no setup link was issued;
// Notifications is nil when the service has no notifications (no
// Notifications page then); Traffic is nil when no flow listener records
// traffic, DNS when no DNS plugin records lookups (their pages then say
// which plugin would, and are not in the menu); Log defaults to a logger that discards and Now to time.Now.
type Deps struct {
	// Scans is the scan log; nil: the Inventory's, if it has ListScans.
	Scans         ScanLog
	Inventory     Inventory
	Accounts      Accounts
	Commander     Commander
	Notifications Notifications
	Traffic       Traffic
	DNS           DNS
	// History is the inventory at past instants (the History page);
	// nil: the Inventory's, if it has DevicesAt, StatsAt and Diff; else
	// no History page. Merging devices is on the device page when the
	// Commander also implements Merger.
	History History
	Setup   *Setup
	Log     zerolog.Logger
	Now     func() time.Time
}

// Server is the web interface's handler. Create it with New.
type Server struct {
	cfg   Config
	inv   Inventory
	scans ScanLog
	acc   Accounts
	cmd   Commander
	notes Notifications
	flows Traffic
	dns   DNS
	hist  History
	merge Merger
	setup *Setup
	log   zerolog.Logger
	now   func() time.Time

	views   *views
	assets  *assets
	ipLim   *limiters
	userLim *limiters
	handler http.Handler
}

// New builds the web interface.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Inventory == nil:
		return nil, errors.New("ui: Deps.Inventory is required")
	case deps.Scans == nil:
		s, ok := deps.Inventory.(ScanLog)
		if !ok {
			return nil, errors.New("ui: Deps.Scans is required")
		}
		deps.Scans = s
	}
	switch {
	case deps.Accounts == nil:
		return nil, errors.New("ui: Deps.Accounts is required")
	case deps.Commander == nil:
		return nil, errors.New("ui: Deps.Commander is required")
	}
	cfg.setDefaults()
	if deps.History == nil {
		if h, ok := deps.Inventory.(History); ok {
			deps.History = h
		}
	}
	merge, _ := deps.Commander.(Merger)
	if deps.Now == nil {
		deps.Now = time.Now
	}
	as, err := loadAssets()
	if err != nil {
		return nil, err
	}
	vs, err := parseViews(as, cfg.Location)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, inv: deps.Inventory, scans: deps.Scans, acc: deps.Accounts, cmd: deps.Commander, setup: deps.Setup,
		notes: deps.Notifications, flows: deps.Traffic, dns: deps.DNS, hist: deps.History, merge: merge,
		log: deps.Log, now: deps.Now, views: vs, assets: as,
		ipLim:   newLimiters(cfg.SignInRate, cfg.SignInBurst),
		userLim: newLimiters(cfg.AccountRate, cfg.AccountBurst),
	}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP serves every path of the web interface.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// routes lists every method and path of the web interface. GET routes
// answer HEAD too; a path with no route for the method answers 405.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	public := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.handle(h)) }
	private := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.handle(s.signedIn(h))) }

	mux.Handle("GET /static/", s.assets)
	public("GET /signin", s.signInPage)
	public("POST /signin", s.signIn)
	public("GET /setup", s.setupPage)
	public("POST /setup", s.setupSubmit)
	private("POST /signout", s.signOut)

	private("GET /{$}", s.devicesPage)
	private("GET /devices", s.devicesPage)
	private("POST /devices/bulk", s.bulkEdit)
	private("GET /devices/{id}", s.devicePage)
	private("POST /devices/{id}", s.deviceEdit)
	private("POST /devices/{id}/watch", s.deviceWatch)
	private("POST /devices/{id}/merge", s.deviceMerge)
	private("POST /devices/{id}/unmerge", s.deviceUnmerge)
	private("GET /history", s.historyPage)
	private("GET /changes", s.changesPage)
	private("GET /scans", s.scansPage)
	private("GET /groups", s.groupsPage)
	private("GET /stats", s.statsPage)
	private("GET /tokens", s.tokensPage)
	private("POST /tokens", s.tokenCreate)
	private("POST /tokens/{id}/revoke", s.tokenRevoke)
	private("GET /users", s.usersPage)
	private("POST /users", s.userAdd)
	private("POST /users/{name}/password", s.userPassword)
	private("POST /users/{name}/remove", s.userRemove)
	private("GET /settings", s.settingsPage)
	private("GET /traffic", s.trafficPage)
	private("GET /dns", s.dnsPage)
	private("GET /notifications", s.notificationsPage)
	private("GET /notifications/{name}", s.notificationPage)
	private("POST /notifications/{name}", s.notificationRules)
	private("POST /notifications/{name}/test", s.notificationTest)
	private("POST /notifications/{name}/redeliver", s.notificationRedeliver)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errForbidden("This request came from another site, so it was refused. Open jocasta directly and submit the form again."))
	}))
	return securityHeaders(cop.Handler(s.withErrorPages(mux)))
}

// withErrorPages serves the mux's own 404 and 405 answers as pages (405
// keeps its Allow header).
func (s *Server) withErrorPages(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			s.writeError(w, r, &pageError{Status: http.StatusMethodNotAllowed, Title: "Method not allowed",
				Msg: r.Method + " is not allowed here; this path takes " + probe.header.Get("Allow") + "."})
			return
		}
		s.writeError(w, r, errNotFound("There is no page at "+r.URL.Path+"."))
	})
}

// statusProbe records the status a handler writes and discards its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.status = code }

// CSP is the Content-Security-Policy of every page: only this origin's
// stylesheet and images, no script at all, no framing, forms posting
// only here.
const CSP = "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
