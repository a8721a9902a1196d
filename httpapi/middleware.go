package httpapi

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// middleware wraps a handler.
type middleware func(http.Handler) http.Handler

func chain(h http.Handler, mws ...middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// isAPIPath reports whether path belongs to the JSON API.
func isAPIPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/")
}

// isMCPPath reports whether path belongs to the MCP endpoint.
func isMCPPath(path string) bool {
	return path == "/mcp" || strings.HasPrefix(path, "/mcp/")
}

// requestID stores the request state and the request's logger in the
// context and sets X-Request-Id: the client's own id when it is 1 to 128
// characters of [A-Za-z0-9._:-], otherwise a new random one. The logger,
// for zerolog.Ctx, adds request_id to every line it writes (a hook
// rather than With, which copies the logger's fields into a new
// 500-byte buffer for every request).
func (s *server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = rand.Text()
		}
		w.Header().Set("X-Request-Id", id)
		ctx := withState(r.Context(), &reqState{id: id})
		ctx = s.log.Hook(requestIDHook(id)).WithContext(ctx)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requestIDHook adds request_id to the lines of a request's logger.
type requestIDHook string

func (h requestIDHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("request_id", string(h))
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// realClient resolves the client address (see clientAddr) and writes it
// to r.RemoteAddr for handlers outside this package.
func (s *server) realClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateFrom(r.Context())
		st.client = clientAddr(r.RemoteAddr, r.Header, s.cfg.TrustedProxies, s.cfg.ProxyHeader)
		if st.client.IsValid() {
			if peer, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || peer.Addr().Unmap() != st.client {
				r.RemoteAddr = netip.AddrPortFrom(st.client, 0).String()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status and size of a response for the access
// log. It passes Flush through (MCP streams) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog writes one line per request: request_id, method, path (never
// the query string, which is where secrets could be), status, bytes,
// duration_ms, client, and token_id once authenticated. Headers (and so
// the Authorization header) are never logged.
func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		st := stateFrom(r.Context())
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		var ev *zerolog.Event
		if status >= 500 && status != statusClientClosed {
			ev = s.log.Warn()
		} else {
			ev = s.log.Info()
		}
		path := r.URL.Path
		if len(path) > 256 {
			path = path[:256] + "..."
		}
		ev = ev.Str("request_id", st.id).Str("method", r.Method).Str("path", path).
			Int("status", status).Int64("bytes", sw.bytes).
			Float64("duration_ms", float64(s.now().Sub(start).Microseconds())/1000).
			Str("client", addrString(st.client))
		if st.authed {
			ev = ev.Str("token_id", st.principal.TokenID)
		}
		ev.Msg("http request")
		if s.cfg.ObserveRequest != nil {
			route := st.route
			if route == "" {
				route = "unmatched"
			}
			s.cfg.ObserveRequest(route, status, s.now().Sub(start))
		}
	})
}

// routed notes the route a request matched (a path template such as
// /api/devices/{id}, "ui", "/mcp") for ObserveRequest: a label with a
// bounded number of values, never the raw path.
func routed(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stateFrom(r.Context()).route = name
		next.ServeHTTP(w, r)
	})
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// recoverPanic turns a panic into a 500 problem carrying only the request
// id; the panic and its stack are logged. http.ErrAbortHandler passes.
func (s *server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error().Str("request_id", stateFrom(r.Context()).id).
				Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).
				Msg("httpapi: handler panicked")
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				panic(http.ErrAbortHandler) // the answer has begun; cut the connection
			}
			writeProblem(w, r, errInternal())
		}()
		next.ServeHTTP(w, r)
	})
}

// APICSP is the Content-Security-Policy of every answer that is not a
// page (JSON, problems, MCP): nothing may load or frame it.
const APICSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// securityHeaders sets the headers every answer carries, on every path:
// no sniffing, no referrer, no framing, and a CSP that allows nothing.
// The UI replaces Content-Security-Policy with its own for pages (it
// sets the header before writing; a handler's Set wins over this
// default). /api answers are also never cached.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Shared, never-modified values: Set would allocate a slice per
		// header per request. (A later Set replaces the slice; an Add
		// copies it, its capacity being its length.)
		h := w.Header()
		h["X-Content-Type-Options"] = valNosniff
		h["Referrer-Policy"] = valNoReferrer
		h["X-Frame-Options"] = valDeny
		h["Content-Security-Policy"] = valAPICSP
		if isAPIPath(r.URL.Path) {
			h["Cache-Control"] = valNoStore
		}
		next.ServeHTTP(w, r)
	})
}

var (
	valNosniff    = []string{"nosniff"}
	valNoReferrer = []string{"no-referrer"}
	valDeny       = []string{"DENY"}
	valAPICSP     = []string{APICSP}
	valNoStore    = []string{"no-store"}
)

// allowedHost refuses, with 421, a request for the web interface (any
// path outside /api and /mcp) whose Host is not one of
// Config.AllowedHosts, when that list is set. Cookie sessions need it: a
// page on an attacker's domain that resolves to this server (DNS
// rebinding) must not be served as this server's origin. /api and /mcp
// authenticate with bearer tokens, which such a page does not have.
func (s *server) allowedHost(next http.Handler) http.Handler {
	if len(s.hosts) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.hosts[hostOnly(r.Host)]; !ok && !isAPIPath(r.URL.Path) && !isMCPPath(r.URL.Path) && r.URL.Path != "/metrics" {
			writeProblem(w, r, errMisdirected(r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is the host of a Host header, lower case, without the port
// and brackets.
func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

// CORS values sent to listed origins.
const (
	corsAllowMethods  = "GET, HEAD, PATCH"
	corsAllowHeaders  = "Authorization, Content-Type, X-Request-Id"
	corsExposeHeaders = "Allow, Retry-After, WWW-Authenticate, X-Request-Id"
	corsMaxAge        = "600"
)

func (s *server) corsAllowed(r *http.Request) (string, bool) {
	if len(s.origins) == 0 || !isAPIPath(r.URL.Path) {
		return "", false
	}
	origin := r.Header.Get("Origin")
	_, ok := s.origins[origin]
	return origin, ok && origin != ""
}

func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// corsHeaders adds CORS headers to /api answers for a listed origin (exact
// match). With an empty list, or for any other origin, it adds none.
func (s *server) corsHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.origins) > 0 && isAPIPath(r.URL.Path) {
			w.Header().Add("Vary", "Origin")
		}
		if origin, ok := s.corsAllowed(r); ok {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			if isPreflight(r) {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
			} else {
				h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// corsPreflight answers a preflight from a listed origin with 204. Other
// OPTIONS requests go on to the router, which answers 405 with Allow.
func (s *server) corsPreflight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.corsAllowed(r); ok && isPreflight(r) {
			h := w.Header()
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientLimit applies the per-client-address rate limit to every request.
func (s *server) clientLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateFrom(r.Context())
		if ok, wait := s.clientLim.take(clientKey(st.client), s.now()); !ok {
			writeProblem(w, r, errRateLimited(retryAfter(wait), fmt.Sprintf(
				"this client address sent more than %s requests per second (burst %d): wait Retry-After seconds, then send fewer requests",
				formatRate(float64(s.cfg.ClientRate)), s.cfg.ClientBurst)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func formatRate(r float64) string {
	return strconv.FormatFloat(r, 'g', 4, 64)
}
