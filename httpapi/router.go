package httpapi

import (
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
)

// server holds the handlers' dependencies. Handlers are its methods, one
// file per resource.
type server struct {
	cfg   Config
	inv   Inventory
	scans ScanLog
	flows Traffic       // optional: nil answers 404 not-recorded
	dns   DNS           // optional: nil answers 404 not-recorded
	notes Notifications // optional: nil answers 404 under /api/notifications
	cmd   Commander
	auth  Authenticator
	ready Readiness
	now   func() time.Time
	log   zerolog.Logger
	ew    errorWriter
	spec  []byte // the OpenAPI document as JSON

	origins   map[string]struct{}
	hosts     map[string]struct{} // Config.AllowedHosts, by hostOnly
	clientLim *limiterSet[netip.Addr]
	failLim   *limiterSet[netip.Addr]
	tokenLim  *limiterSet[string]
	writeLim  *limiterSet[string]
	space     DiskSpace
}

// route is one method and path of the API.
type route struct {
	method string
	path   string
	access access
	h      handlerFunc
}

// routes lists every method and path of the JSON API. GET routes answer
// HEAD too. openapi.yaml describes exactly these (a test checks).
func (s *server) routes() []route {
	rs := []route{
		{http.MethodGet, "/api/livez", accessPublic, s.livez},
		{http.MethodGet, "/api/readyz", accessPublic, s.readyz},
		{http.MethodGet, "/api/openapi.json", accessPublic, s.openapi},
		{http.MethodGet, "/api/stats", accessRead, s.stats},
		{http.MethodGet, "/api/groups", accessRead, s.groups},
		{http.MethodGet, "/api/devices", accessRead, s.listDevices},
		{http.MethodGet, "/api/devices/{id}", accessRead, s.getDevice},
		{http.MethodPatch, "/api/devices/{id}", accessWrite, s.patchDevice},
		{http.MethodPatch, "/api/devices/{id}/watch", accessWrite, s.patchWatch},
		{http.MethodPost, "/api/devices/{id}/merge", accessWrite, s.mergeDevice},
		{http.MethodPost, "/api/devices/{id}/unmerge", accessWrite, s.unmergeDevice},
		{http.MethodGet, "/api/devices/{id}/events", accessRead, s.deviceEvents},
		{http.MethodGet, "/api/devices/{id}/traffic", accessRead, s.deviceTraffic},
		{http.MethodGet, "/api/devices/{id}/timeline", accessRead, s.deviceTimeline},
		{http.MethodGet, "/api/devices/{id}/dns", accessRead, s.deviceDNS},
		{http.MethodGet, "/api/traffic", accessRead, s.trafficOverview},
		{http.MethodGet, "/api/events", accessRead, s.listEvents},
		{http.MethodGet, "/api/scans", accessRead, s.listScans},
		{http.MethodGet, "/api/diff", accessRead, s.diff},
	}
	rs = append(rs,
		route{http.MethodGet, "/api/notifications", accessRead, s.listNotifications},
		route{http.MethodGet, "/api/notifications/{id}", accessRead, s.getNotification},
		route{http.MethodPut, "/api/notifications/{id}", accessWrite, s.putNotification},
		route{http.MethodGet, "/api/notifications/{id}/ledger", accessRead, s.notificationLedger},
		route{http.MethodPost, "/api/notifications/{id}/test", accessWrite, s.testNotification},
		route{http.MethodPost, "/api/notifications/{id}/redeliver", accessWrite, s.redeliverNotification},
	)
	return rs
}

// New builds the HTTP handler of the whole server: the JSON API under
// /api, MCP at /mcp and the UI everywhere else. The middleware chain, in
// order: request id → client address (trusted proxies) → access log →
// panic recovery → /api headers → CORS headers → per-client rate limit →
// CORS preflight → router. Authenticated routes add: token check (with
// the failed-token limit) → per-token rate limit → mode check.
func New(cfg Config, deps Deps) (http.Handler, error) {
	_, h, err := build(cfg, deps)
	return h, err
}

func build(cfg Config, deps Deps) (*server, http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := deps.check(); err != nil {
		return nil, nil, err
	}
	cfg.setDefaults()
	spec, err := OpenAPIJSON()
	if err != nil {
		return nil, nil, err
	}
	s := &server{
		cfg: cfg, inv: deps.Inventory, scans: deps.Scans, cmd: deps.Commander, auth: deps.Auth, ready: deps.Ready,
		now: deps.Now, log: deps.Log, ew: errorWriter{log: deps.Log}, spec: spec,
		origins:   map[string]struct{}{},
		clientLim: newLimiterSet[netip.Addr](cfg.ClientRate, cfg.ClientBurst),
		failLim:   newLimiterSet[netip.Addr](cfg.FailedAuthRate, cfg.FailedAuthBurst),
		tokenLim:  newLimiterSet[string](cfg.TokenRate, cfg.TokenBurst),
		writeLim:  newLimiterSet[string](cfg.WriteRate, cfg.WriteBurst),
		space:     deps.Space,
		flows:     deps.Traffic,
		dns:       deps.DNS,
		notes:     deps.Notifications,
	}
	for _, o := range cfg.CORSOrigins {
		s.origins[o] = struct{}{}
	}
	if len(cfg.AllowedHosts) > 0 {
		s.hosts = map[string]struct{}{}
		for _, h := range cfg.AllowedHosts {
			s.hosts[hostOnly(h)] = struct{}{}
		}
	}

	// Each path is one mux route that dispatches on the method itself:
	// gorilla/mux v1.8.1 loses its method mismatch when a later route
	// matches the method, so 405 is decided here.
	r := mux.NewRouter().SkipClean(true)
	byPath := map[string]map[string]http.Handler{}
	var paths []string
	for _, rt := range s.routes() {
		methods := []string{rt.method}
		if rt.method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		var h http.Handler = s.ew.handle(rt.h)
		if rt.access != accessPublic {
			h = s.authenticate(rt.access, h)
		}
		if byPath[rt.path] == nil {
			byPath[rt.path] = map[string]http.Handler{}
			paths = append(paths, rt.path)
		}
		for _, m := range methods {
			byPath[rt.path][m] = h
		}
	}
	for _, p := range paths {
		handlers := byPath[p]
		allow := make([]string, 0, len(handlers))
		for m := range handlers {
			allow = append(allow, m)
		}
		slices.SortFunc(allow, func(a, b string) int { return methodOrder(a) - methodOrder(b) })
		r.Path(p).Handler(routed(p, methodSwitch{handlers: handlers, allow: allow}))
	}

	// /metrics: the Prometheus text format, behind a read token (as
	// Prometheus' authorization block sends it).
	if cfg.Metrics != nil {
		r.Path("/metrics").Handler(routed("/metrics", s.authenticate(accessRead, cfg.Metrics)))
	}

	mcpOff := errMCPDisabled
	if cfg.MCPEnabled {
		mcpOff = errMCPUnavailable
	}
	var mcpHandler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, mcpOff())
	})
	if cfg.MCPEnabled && cfg.MCP != nil {
		mcpHandler = s.authenticate(accessRead, limitMCPBody(mcpProblems(cfg.MCP)))
	}
	r.Path("/mcp").Handler(routed("/mcp", mcpHandler))
	r.PathPrefix("/mcp/").Handler(routed("/mcp", mcpHandler))

	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, errPathNotFound(r.URL.Path))
	})
	if cfg.UI != nil {
		r.MatcherFunc(func(r *http.Request, _ *mux.RouteMatch) bool {
			return !isAPIPath(r.URL.Path)
		}).Handler(routed("ui", cfg.UI))
	}
	r.NotFoundHandler = notFound

	return s, chain(r,
		s.requestID,
		s.realClient,
		s.accessLog,
		s.recoverPanic,
		securityHeaders,
		s.allowedHost,
		s.corsHeaders,
		s.clientLimit,
		s.corsPreflight,
	), nil
}

func methodOrder(m string) int {
	switch m {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	default:
		return 2 + int(m[0])
	}
}

// methodSwitch serves one path: the handler of the request's method, or
// 405 with the path's methods in Allow.
type methodSwitch struct {
	handlers map[string]http.Handler
	allow    []string
}

func (m methodSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := m.handlers[r.Method]; ok {
		h.ServeHTTP(w, r)
		return
	}
	writeProblem(w, r, errMethodNotAllowed(r.Method, m.allow))
}
