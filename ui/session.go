package ui

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/access"
)

// CookieName is the session cookie's name.
const CookieName = "jocasta_session"

// formField is the hidden form field that carries the per-session form
// token on every POST of a signed-in page.
const formField = "form_token"

// maxForm bounds a form body.
const maxForm = 64 << 10

type sessionKey struct{}

// reqSession is the signed-in state of a request.
type reqSession struct {
	sess      access.Session
	formToken string
}

func sessionFrom(ctx context.Context) *reqSession {
	rs, _ := ctx.Value(sessionKey{}).(*reqSession)
	return rs
}

// formTokenOf derives the form token of a session from its cookie
// secret: only a page that was given the token (a page of this origin,
// rendered for this session) can post it. It survives a restart, like
// the session.
func formTokenOf(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("jocasta form token v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// signedIn admits requests with a live session: others are sent to the
// sign-in page. It ends idle sessions, and on POST checks the form token
// (Go's cross-origin protection has already refused cross-site POSTs).
func (s *Server) signedIn(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", "no-store")
		c, err := r.Cookie(CookieName)
		if err != nil || c.Value == "" {
			return s.toSignIn(w, r, "")
		}
		sess, err := s.acc.Session(c.Value)
		if err != nil {
			s.clearCookie(w)
			return s.toSignIn(w, r, "expired")
		}
		if s.acc.TouchSession(sess.ID, s.now(), s.cfg.IdleTimeout) {
			s.clearCookie(w)
			if err := s.cmd.EndSession(r.Context(), sess.User, sess.ID, events.SessionEndIdle); err != nil {
				return err
			}
			return s.toSignIn(w, r, "idle")
		}
		rs := &reqSession{sess: sess, formToken: formTokenOf(c.Value)}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				return errBadRequest("The form could not be read; it may be too large (64 KiB at most).")
			}
			got := r.PostForm.Get(formField)
			if subtle.ConstantTimeCompare([]byte(got), []byte(rs.formToken)) != 1 {
				return errForbidden("The form was out of date or did not come from this site. Reload the page and submit it again.")
			}
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, rs)))
	}
}

// toSignIn sends the browser to the sign-in page, back to this page
// afterwards (GET only).
func (s *Server) toSignIn(w http.ResponseWriter, r *http.Request, why string) error {
	q := url.Values{}
	if why != "" {
		q.Set("m", why)
	}
	if r.Method == http.MethodGet && r.URL.Path != "/" {
		q.Set("next", r.URL.RequestURI())
	}
	target := "/signin"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

func (s *Server) setCookie(w http.ResponseWriter, secret string, exp time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: secret, Path: "/", Expires: exp,
		HttpOnly: true, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode,
	})
}

func (s *Server) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode,
	})
}

// signInView is the sign-in page.
type signInView struct {
	Name    string
	Next    string
	Notice  string
	Problem string
	Setup   bool // no account exists yet
}

var notices = map[string]string{
	"expired":   "Your session has ended. Sign in again.",
	"idle":      "You were signed out after a period without activity. Sign in again.",
	"signedout": "You are signed out.",
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	v := signInView{Next: safeNext(r.URL.Query().Get("next")), Notice: notices[r.URL.Query().Get("m")], Setup: !s.acc.HasUsers()}
	s.render(w, r, http.StatusOK, "signin", v)
	return nil
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return errBadRequest("The form could not be read; it may be too large (64 KiB at most).")
	}
	name, password := strings.TrimSpace(r.PostForm.Get("name")), r.PostForm.Get("password")
	next := safeNext(r.PostForm.Get("next"))
	if ok, retry := s.ipLim.allow(clientKey(r), s.now()); !ok {
		return errTooMany(retry)
	}
	if ok, retry := s.userLim.allow(strings.ToLower(name), s.now()); !ok {
		return errTooMany(retry)
	}
	if name == "" || password == "" || !s.acc.CheckPassword(name, password) {
		s.render(w, r, http.StatusUnauthorized, "signin", signInView{Name: name, Next: next, Problem: "Wrong name or password."})
		return nil
	}
	return s.startSession(w, r, name, next)
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, name, next string) error {
	sess, secret, err := s.cmd.StartSession(r.Context(), name, s.cfg.SessionLifetime)
	if err != nil {
		return err
	}
	s.acc.TouchSession(sess.ID, s.now(), s.cfg.IdleTimeout)
	s.setCookie(w, secret, sess.ExpiresAt)
	if next == "" {
		next = "/"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	if err := s.cmd.EndSession(r.Context(), rs.sess.User, rs.sess.ID, events.SessionEndSignOut); err != nil {
		return err
	}
	s.clearCookie(w)
	http.Redirect(w, r, "/signin?m=signedout", http.StatusSeeOther)
	return nil
}

// safeNext keeps a return path only when it is a path of this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return ""
	}
	return next
}

// clientKey is the client's address (httpapi writes the address it
// resolved through server.trusted_proxies to RemoteAddr); an IPv6 client
// counts by its /64.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// limiters is a token bucket per key, forgotten after 10 idle minutes.
type limiters struct {
	rate  rate.Limit
	burst int

	mu sync.Mutex
	m  map[string]*limiter
}

type limiter struct {
	lim  *rate.Limiter
	last time.Time
}

func newLimiters(r rate.Limit, burst int) *limiters {
	return &limiters{rate: r, burst: burst, m: map[string]*limiter{}}
}

// allow takes one token for key; when none is left it returns false and
// how long until one is.
func (l *limiters) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	if !ok {
		if len(l.m) > 10000 {
			for k, v := range l.m {
				if now.Sub(v.last) > 10*time.Minute {
					delete(l.m, k)
				}
			}
		}
		e = &limiter{lim: rate.NewLimiter(l.rate, l.burst)}
		l.m[key] = e
	}
	e.last = now
	if e.lim.AllowN(now, 1) {
		return true, 0
	}
	r := e.lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return false, d
}

// Setup is the one-time setup link that creates the first account. Its
// secret is kept only in memory, hashed; it works while no account
// exists, once.
type Setup struct {
	hash [32]byte

	mu       sync.Mutex
	used     bool
	inFlight bool
}

// NewSetup returns a setup link's state and its secret (for
// /setup?token=<secret>, printed to serve's log).
func NewSetup() (*Setup, string) {
	secret, _ := access.NewSessionSecret()
	return &Setup{hash: sha256.Sum256([]byte(secret))}, secret
}

// errSetupUsed and errSetupBad are the setup link's refusals.
var (
	errSetupUsed = errGone("This setup link was already used (or an account now exists). Sign in, or add accounts with jocasta user add.")
	errSetupBad  = errNotFound("This setup link is not valid. Use the link that jocasta serve printed to its log.")
)

// check says whether token is this link's secret and the link is unused.
func (st *Setup) check(token string) error {
	if st == nil {
		return errSetupBad
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], st.hash[:]) != 1 {
		return errSetupBad
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.used {
		return errSetupUsed
	}
	return nil
}

// begin claims the link for one attempt; finish releases it, used when
// the account was created.
func (st *Setup) begin(token string) error {
	if err := st.check(token); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.used || st.inFlight {
		return errSetupUsed
	}
	st.inFlight = true
	return nil
}

func (st *Setup) finish(used bool) {
	st.mu.Lock()
	st.inFlight = false
	st.used = st.used || used
	st.mu.Unlock()
}

// setupView is the setup page.
type setupView struct {
	Token   string
	Name    string
	Problem string
}

func (s *Server) setupPage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	token := r.URL.Query().Get("token")
	if err := s.setup.check(token); err != nil {
		return err
	}
	if s.acc.HasUsers() {
		return errSetupUsed
	}
	s.render(w, r, http.StatusOK, "setup", setupView{Token: token})
	return nil
}

func (s *Server) setupSubmit(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return errBadRequest("The form could not be read; it may be too large (64 KiB at most).")
	}
	token, name := r.PostForm.Get("token"), strings.TrimSpace(r.PostForm.Get("name"))
	password, again := r.PostForm.Get("password"), r.PostForm.Get("password2")
	if err := s.setup.begin(token); err != nil {
		return err
	}
	created := false
	defer func() { s.setup.finish(created) }()
	if s.acc.HasUsers() {
		created = true // an account exists: the link has no use left
		return errSetupUsed
	}
	problem := ""
	if password != again {
		problem = "The two passwords differ."
	} else if err := s.cmd.AddUser(r.Context(), "ui", "setup", name, password); err != nil {
		if !isUserError(err) {
			return err
		}
		problem = userMessage(err)
	}
	if problem != "" {
		s.render(w, r, http.StatusBadRequest, "setup", setupView{Token: token, Name: name, Problem: problem})
		return nil
	}
	created = true
	s.log.Info().Str("user", name).Msg("ui: first account created with the setup link; the link is now spent")
	return s.startSession(w, r, name, "/")
}

// isUserError reports whether err is a command refused for its input or
// the state it met (shown on the form), not a failure.
func isUserError(err error) bool {
	var pe *pageError
	return errors.As(err, new(*commandInvalid)) || errors.As(err, new(*commandRefused)) || errors.As(err, &pe)
}
