package ui_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/ui"
)

func deviceFilterQ(ip string) projections.DeviceFilter {
	return projections.DeviceFilter{Q: ip, Limit: 1000}
}

// seeded is a stack with an account "ada" and three devices.
func seeded(t *testing.T, o stackOpts) (*stack, *client) {
	t.Helper()
	s := newStack(t, o)
	s.addUser("ada", "correct horse")
	s.sweep(t0.Add(-2*time.Hour), host(1, "printer.lan"), host(2, "nas.lan"), host(3, ""))
	s.sweep(t0.Add(-time.Hour), host(1, "printer.lan"), host(2, "nas.lan"))
	c := s.client()
	c.signIn("ada", "correct horse")
	return s, c
}

func TestEveryPageRenders(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	id := s.deviceID("10.0.0.1")
	tests := []struct {
		path string
		want []string
	}{
		{"/", []string{"<b>3</b> devices", "printer.lan", "nas.lan", `name="form_token"`}},
		{"/devices", []string{"printer.lan", "10.0.0.2", "Apply to selected"}},
		{"/devices?presence=online&sort=-name", []string{"printer.lan"}},
		{"/devices?q=nas", []string{"nas.lan"}},
		{"/devices/" + id, []string{"printer.lan", "02:00:00:00:00:01", "10.0.0.1", "Names by source", "dns", "<svg class=\"strip\"", "device.discovered"}},
		{"/changes", []string{"device.discovered", "Change log"}},
		{"/changes?kind=device.discovered&kind=device.online", []string{"device.discovered"}},
		{"/scans", []string{"sweep:lab", "10.0.0.0/24", "complete"}},
		// A day as since and until is that whole day.
		{"/changes?since=2026-03-10&until=2026-03-10", []string{"device.discovered"}},
		{"/scans?since=2026-03-10&until=2026-03-10", []string{"sweep:lab"}},
		{"/groups", []string{"No group yet"}},
		{"/stats", []string{"By presence", "By network", "10.0.0.0/24"}},
		{"/tokens", []string{"Create a token", "No token"}},
		{"/users", []string{"ada", "(you)", "Add an account"}},
		{"/settings", []string{"port: 8080", "Session lifetime", "24h0m0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			w := c.get(tc.path)
			wantStatus(t, w, http.StatusOK, tc.want...)
			if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store on a signed-in page", cc)
			}
			head := c.do(httptest.NewRequest(http.MethodHead, tc.path, nil))
			if head.Code != http.StatusOK || head.Body.Len() != 0 {
				t.Errorf("HEAD: %d with %d bytes", head.Code, head.Body.Len())
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	s := newStack(t, stackOpts{})
	for _, path := range []string{"/signin", "/devices", "/nope"} {
		w := s.client().get(path)
		h := w.Header()
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
}

func TestSignedOutIsSentToSignIn(t *testing.T) {
	s := newStack(t, stackOpts{})
	for _, path := range []string{"/", "/devices", "/devices/x", "/changes", "/scans", "/groups", "/stats", "/tokens", "/users", "/settings"} {
		w := s.client().get(path)
		if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/signin") {
			t.Errorf("%s: %d to %q, want 303 to /signin", path, w.Code, w.Header().Get("Location"))
		}
		if path != "/" && !strings.Contains(w.Header().Get("Location"), "next="+url.QueryEscape(path)) {
			t.Errorf("%s: Location %q does not return here", path, w.Header().Get("Location"))
		}
	}
	for _, path := range []string{"/signout", "/devices/bulk", "/tokens", "/users"} {
		w := s.client().post(path, url.Values{"x": {"1"}})
		if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/signin") {
			t.Errorf("POST %s signed out: %d, want 303 to /signin", path, w.Code)
		}
	}
	// A cookie that names no session is dropped.
	c := s.client()
	c.cookie = &http.Cookie{Name: ui.CookieName, Value: strings.Repeat("a", 43)}
	w := c.get("/devices")
	if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "m=expired") || c.cookie != nil {
		t.Errorf("stale cookie: %d %q, cookie kept %v", w.Code, w.Header().Get("Location"), c.cookie)
	}
}

func TestSignIn(t *testing.T) {
	s := newStack(t, stackOpts{})
	s.addUser("ada", "correct horse")
	tests := []struct {
		name, user, password string
		code                 int
	}{
		{"wrong password", "ada", "wrong horse", http.StatusUnauthorized},
		{"unknown user", "bob", "correct horse", http.StatusUnauthorized},
		{"empty password", "ada", "", http.StatusUnauthorized},
		{"right", "ada", "correct horse", http.StatusSeeOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := s.client()
			w := c.post("/signin", url.Values{"name": {tc.user}, "password": {tc.password}, "next": {"/scans"}})
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d", w.Code, tc.code)
			}
			if tc.code != http.StatusSeeOther {
				wantStatus(t, w, tc.code, "Wrong name or password.")
				if c.cookie != nil {
					t.Error("a failed sign-in set a cookie")
				}
				return
			}
			if loc := w.Header().Get("Location"); loc != "/scans" {
				t.Errorf("Location %q, want the next page", loc)
			}
			ck := c.cookie
			if ck == nil || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || len(ck.Value) != 43 {
				t.Fatalf("cookie %+v", ck)
			}
			if !ck.Expires.Equal(t0.Add(24 * time.Hour)) {
				t.Errorf("cookie expires %v, want the session's end", ck.Expires)
			}
			// The log holds the secret's hash, never the secret.
			sess := s.acc.Sessions(s.clock.Now())
			if len(sess) != 1 || sess[0].User != "ada" {
				t.Fatalf("sessions %+v", sess)
			}
		})
	}
	t.Run("unsafe next", func(t *testing.T) {
		c := s.client()
		for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
			w := c.post("/signin", url.Values{"name": {"ada"}, "password": {"correct horse"}, "next": {next}})
			if loc := w.Header().Get("Location"); loc != "/" {
				t.Errorf("next %q: Location %q, want /", next, loc)
			}
		}
	})
	t.Run("insecure cookie when configured", func(t *testing.T) {
		cfg := defaultConfig()
		cfg.CookieSecure = false
		s2 := newStack(t, stackOpts{cfg: cfg})
		s2.addUser("ada", "correct horse")
		c := s2.client()
		c.signIn("ada", "correct horse")
		if c.cookie.Secure {
			t.Error("cookie Secure with cookie_secure false")
		}
	})
}

func TestSignInRateLimits(t *testing.T) {
	s := newStack(t, stackOpts{cfg: ui.Config{SignInBurst: 3, AccountBurst: 5}})
	s.addUser("ada", "correct horse")
	c := s.client()
	for i := range 3 {
		if w := c.post("/signin", url.Values{"name": {"x" + string(rune('a'+i))}, "password": {"wrong"}}); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, w.Code)
		}
	}
	w := c.post("/signin", url.Values{"name": {"ada"}, "password": {"correct horse"}})
	wantStatus(t, w, http.StatusTooManyRequests, "Too many sign-in attempts")
	if w.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// Per account, from many addresses.
	for i := range 5 {
		c := s.client()
		c.addr = "198.51.100." + string(rune('1'+i)) + ":1"
		if w := c.post("/signin", url.Values{"name": {"ada"}, "password": {"wrong"}}); w.Code != http.StatusUnauthorized {
			t.Fatalf("account attempt %d: %d", i, w.Code)
		}
	}
	c2 := s.client()
	c2.addr = "203.0.113.9:1"
	wantStatus(t, c2.post("/signin", url.Values{"name": {"ada"}, "password": {"correct horse"}}), http.StatusTooManyRequests)
	// Another account from that address is not limited.
	s.addUser("bob", "battery staple")
	if w := c2.post("/signin", url.Values{"name": {"bob"}, "password": {"battery staple"}}); w.Code != http.StatusSeeOther {
		t.Errorf("bob: %d", w.Code)
	}
}

func TestSessionExpiryAndIdle(t *testing.T) {
	t.Run("lifetime", func(t *testing.T) {
		s, c := seeded(t, stackOpts{})
		var w *httptest.ResponseRecorder
		for range 30 { // active every 58 minutes: never idle
			s.clock.Advance(58 * time.Minute)
			if w = c.get("/stats"); w.Code != http.StatusOK {
				break
			}
		}
		if s.clock.Now().Before(t0.Add(24 * time.Hour)) {
			t.Fatalf("signed out at %v, before the lifetime", s.clock.Now())
		}
		if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "m=expired") {
			t.Fatalf("after the lifetime: %d %q", w.Code, w.Header().Get("Location"))
		}
		wantStatus(t, c.get(w.Header().Get("Location")), http.StatusOK, "Your session has ended")
	})
	t.Run("idle", func(t *testing.T) {
		s, c := seeded(t, stackOpts{})
		id := s.acc.Sessions(s.clock.Now())[0].ID
		s.clock.Advance(61 * time.Minute)
		w := c.get("/stats")
		if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "m=idle") {
			t.Fatalf("idle: %d %q", w.Code, w.Header().Get("Location"))
		}
		if _, ok := s.acc.SessionByID(id); ok {
			t.Error("the idle session was not ended")
		}
		if c.cookie != nil {
			t.Error("the cookie was not cleared")
		}
	})
}

func TestSignOut(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	old := c.cookie
	w := c.post("/signout", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/signin?m=signedout" {
		t.Fatalf("sign out: %d %q", w.Code, w.Header().Get("Location"))
	}
	if len(s.acc.Sessions(s.clock.Now())) != 0 {
		t.Fatal("session still listed after sign-out")
	}
	c.cookie = old // a copy of the old cookie is worth nothing now
	if w := c.get("/devices"); w.Code != http.StatusSeeOther {
		t.Fatalf("old cookie after sign-out: %d", w.Code)
	}
}

func TestFormTokenAndCrossSite(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	id := s.deviceID("10.0.0.1")
	path := "/devices/" + id + "/watch"
	tests := []struct {
		name string
		form url.Values
		hdr  []string
		code int
	}{
		{"no form token", url.Values{"watch": {"yes"}, "form_token": {""}}, nil, http.StatusForbidden},
		{"wrong form token", url.Values{"watch": {"yes"}, "form_token": {strings.Repeat("0", 64)}}, nil, http.StatusForbidden},
		{"cross-site fetch", url.Values{"watch": {"yes"}}, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"foreign origin", url.Values{"watch": {"yes"}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"same origin", url.Values{"watch": {"yes"}}, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusSeeOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := c.post(path, tc.form, tc.hdr...)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %.500s", w.Code, tc.code, w.Body.String())
			}
			d, _ := s.inv.Device(context.Background(), id)
			if d.Watched != (tc.code == http.StatusSeeOther) {
				t.Errorf("watched %v after %s", d.Watched, tc.name)
			}
		})
	}
	// Sign-in from another site is refused too (login CSRF).
	w := s.client().post("/signin", url.Values{"name": {"ada"}, "password": {"correct horse"}}, "Sec-Fetch-Site", "cross-site")
	wantStatus(t, w, http.StatusForbidden, "another site")
}

func TestDeviceEditRoundTrip(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	id := s.deviceID("10.0.0.2")
	w := c.post("/devices/"+id, url.Values{"label": {"Big NAS"}, "group": {"storage"}, "type": {"nas"}, "notes": {"rack 2\r\nshelf 3"}, "ignored": {"1"}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/devices/"+id+"?saved=1" {
		t.Fatalf("edit: %d %q %s", w.Code, w.Header().Get("Location"), w.Body.String())
	}
	d, _ := s.inv.Device(context.Background(), id)
	if deref(d.Label) != "Big NAS" || deref(d.Group) != "storage" || deref(d.Type) != "nas" || deref(d.Notes) != "rack 2\nshelf 3" || !d.Ignored {
		t.Fatalf("device after edit %+v", d)
	}
	wantStatus(t, c.get("/devices/"+id+"?saved=1"), http.StatusOK, "Saved.", `value="Big NAS"`, "device.edited", "ada",
		"Big NAS (nas.lan)") // the heading, as the list shows it
	// The change log names the user as the actor.
	p, _ := s.inv.ListEvents(context.Background(), projections.EventFilter{Device: id, Kinds: []string{projections.ChangeEdited}, Limit: 10})
	if len(p.Items) == 0 {
		t.Fatal("no device.edited entry")
	}
	for _, e := range p.Items {
		if e.Actor != "ada" {
			t.Fatalf("edit entry actor %q, want the signed-in user", e.Actor)
		}
	}
	// Empty fields clear; unticked ignored unignores.
	c.post("/devices/"+id, url.Values{"label": {""}, "group": {"storage"}, "type": {""}, "notes": {"  "}})
	d, _ = s.inv.Device(context.Background(), id)
	if d.Label != nil || d.Type != nil || d.Notes != nil || deref(d.Group) != "storage" || d.Ignored {
		t.Fatalf("device after clearing %+v", d)
	}
	// A refused edit shows the form again with the reason.
	w = c.post("/devices/"+id, url.Values{"label": {strings.Repeat("x", 129)}})
	wantStatus(t, w, http.StatusBadRequest, "label: 129 characters long: use at most 128")
	// Unknown device.
	wantStatus(t, c.post("/devices/nope", url.Values{"label": {"x"}}), http.StatusNotFound, "no such device")
	wantStatus(t, c.get("/devices/nope"), http.StatusNotFound)
	wantStatus(t, c.post("/devices/nope/watch", url.Values{"watch": {"yes"}}), http.StatusNotFound)
	wantStatus(t, c.post("/devices/"+id+"/watch", url.Values{"watch": {"maybe"}}), http.StatusBadRequest)
	wantStatus(t, c.post("/devices/"+id+"/watch", url.Values{"watch": {"keep"}}), http.StatusBadRequest)
	// Watch and unwatch.
	c.post("/devices/"+id+"/watch", url.Values{"watch": {"yes"}})
	wantStatus(t, c.get("/devices/"+id), http.StatusOK, "Stop watching")
	c.post("/devices/"+id+"/watch", url.Values{"watch": {"no"}})
	wantStatus(t, c.get("/devices/"+id), http.StatusOK, "☆ Watch")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestBulkEdit(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	a, b, other := s.deviceID("10.0.0.1"), s.deviceID("10.0.0.2"), s.deviceID("10.0.0.3")
	w := c.post("/devices/bulk", url.Values{"id": {a, b}, "group": {"office"}, "watch": {"yes"}, "ignored": {"keep"}, "return": {"/devices?sort=name"}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/devices?sort=name&updated=2" {
		t.Fatalf("bulk: %d %q %s", w.Code, w.Header().Get("Location"), w.Body.String())
	}
	for _, id := range []string{a, b} {
		d, _ := s.inv.Device(context.Background(), id)
		if deref(d.Group) != "office" || !d.Watched || d.Ignored {
			t.Errorf("%s after bulk %+v", id, d)
		}
	}
	if d, _ := s.inv.Device(context.Background(), other); d.Group != nil || d.Watched {
		t.Errorf("an unselected device changed: %+v", d)
	}
	wantStatus(t, c.get("/devices?sort=name&updated=2"), http.StatusOK, "2 devices updated.")
	wantStatus(t, c.get("/groups"), http.StatusOK, "office", "/devices?group=office")
	wantStatus(t, c.get("/devices?group=office"), http.StatusOK, "printer.lan", "nas.lan")
	c.post("/devices/bulk", url.Values{"id": {a}, "group_clear": {"1"}, "ignored": {"yes"}, "return": {"https://evil.example/"}})
	d, _ := s.inv.Device(context.Background(), a)
	if d.Group != nil || !d.Ignored {
		t.Errorf("after clear: %+v", d)
	}
	tests := []struct {
		name string
		form url.Values
		code int
		want string
	}{
		{"none selected", url.Values{"group": {"x"}}, http.StatusBadRequest, "No device was selected"},
		{"nothing to change", url.Values{"id": {a}, "watch": {"keep"}}, http.StatusBadRequest, "Nothing to change"},
		{"bad choice", url.Values{"id": {a}, "ignored": {"perhaps"}}, http.StatusBadRequest, "keep, yes or no"},
		{"bad group", url.Values{"id": {a}, "group": {strings.Repeat("g", 65)}}, http.StatusBadRequest, "use at most 64"},
		{"unknown device", url.Values{"id": {"nope"}, "watch": {"yes"}}, http.StatusNotFound, "no such device"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, c.post("/devices/bulk", tc.form), tc.code, tc.want)
		})
	}
}

func TestTokens(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	w := c.post("/tokens", url.Values{"name": {"grafana"}, "mode": {"read"}, "expires": {"30d"}})
	wantStatus(t, w, http.StatusOK, "Copy it now", "grafana")
	secret := secretRE.FindString(w.Body.String())
	if secret == "" {
		t.Fatal("no secret on the page")
	}
	p, err := s.acc.Authenticate(context.Background(), secret)
	if err != nil || p.Name != "grafana" || p.Mode != events.ModeRead {
		t.Fatalf("the shown secret does not authenticate: %+v %v", p, err)
	}
	// Shown once: the list never shows it again.
	w = c.get("/tokens")
	wantStatus(t, w, http.StatusOK, "grafana", "active")
	if strings.Contains(w.Body.String(), secret) {
		t.Fatal("the token list shows the secret")
	}
	wantStatus(t, c.post("/tokens", url.Values{"name": {"grafana"}, "mode": {"read"}, "expires": {"30d"}}), http.StatusBadRequest, "already exists")
	wantStatus(t, c.post("/tokens", url.Values{"name": {"x"}, "mode": {"admin"}, "expires": {"forever"}}), http.StatusBadRequest, "mode", "expires")
	tok := s.acc.Tokens(s.clock.Now())[0]
	w = c.post("/tokens/"+tok.ID+"/revoke", nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", w.Code)
	}
	wantStatus(t, c.get(w.Header().Get("Location")), http.StatusOK, "was revoked", "No token")
	if _, err := s.acc.Authenticate(context.Background(), secret); err == nil {
		t.Fatal("a revoked token still authenticates")
	}
	wantStatus(t, c.post("/tokens/"+tok.ID+"/revoke", nil), http.StatusConflict, "no token has id")
}

var secretRE = regexpMust(`jct_[0-9A-Za-z]{43}`)

func TestUsers(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	w := c.post("/users", url.Values{"name": {"bob"}, "password": {"battery staple"}, "password2": {"battery staple"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("add: %d %s", w.Code, w.Body.String())
	}
	wantStatus(t, c.get("/users?done=added"), http.StatusOK, "The account was added.", "bob")
	tests := []struct {
		name string
		path string
		form url.Values
		code int
		want string
	}{
		{"passwords differ", "/users", url.Values{"name": {"cy"}, "password": {"abcdefgh"}, "password2": {"abcdefgX"}}, http.StatusBadRequest, "differ"},
		{"bad name", "/users", url.Values{"name": {"c y"}, "password": {"abcdefgh"}, "password2": {"abcdefgh"}}, http.StatusBadRequest, "name: must be 1 to 64"},
		{"short password", "/users", url.Values{"name": {"cy"}, "password": {"abc"}, "password2": {"abc"}}, http.StatusBadRequest, "password: must be 8"},
		{"taken", "/users", url.Values{"name": {"bob"}, "password": {"abcdefgh"}, "password2": {"abcdefgh"}}, http.StatusBadRequest, "already exists"},
		{"unknown user password", "/users/zed/password", url.Values{"password": {"abcdefgh"}, "password2": {"abcdefgh"}}, http.StatusBadRequest, "no user"},
		{"unknown user remove", "/users/zed/remove", nil, http.StatusBadRequest, "no user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, c.post(tc.path, tc.form), tc.code, tc.want)
		})
	}
	// Bob signs in; changing his password ends his session, removing him
	// too.
	bob := s.client()
	bob.signIn("bob", "battery staple")
	w = c.post("/users/bob/password", url.Values{"password": {"new staple!"}, "password2": {"new staple!"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("passwd: %d %s", w.Code, w.Body.String())
	}
	if w := bob.get("/devices"); w.Code != http.StatusSeeOther {
		t.Fatalf("bob's session survived his password change: %d", w.Code)
	}
	bob.signIn("bob", "new staple!")
	if w := c.post("/users/bob/remove", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("remove: %d", w.Code)
	}
	if w := bob.get("/devices"); w.Code != http.StatusSeeOther {
		t.Fatalf("bob's session survived his removal: %d", w.Code)
	}
	wantStatus(t, c.get("/users?done=removed"), http.StatusOK, "removed")
	// The last account cannot remove itself here: nobody could sign in
	// again, and no setup link is offered while serve runs.
	if us := s.acc.Users(); len(us) != 1 {
		t.Fatalf("%d accounts left, want one", len(us))
	}
	last := s.acc.Users()[0].Name
	wantStatus(t, c.post("/users/"+last+"/remove", nil), http.StatusBadRequest, "is the only account: add another one first")
	if len(s.acc.Users()) != 1 {
		t.Fatal("the last account was removed")
	}
}

func TestSetupLink(t *testing.T) {
	s := newStack(t, stackOpts{setup: true})
	wantStatus(t, s.client().get("/signin"), http.StatusOK, "No account exists yet")
	wantStatus(t, s.client().get("/setup?token=wrong"), http.StatusNotFound, "not valid")
	wantStatus(t, s.client().get("/setup"), http.StatusNotFound)
	link := "/setup?token=" + s.setup
	wantStatus(t, s.client().get(link), http.StatusOK, "Create the first account")
	c := s.client()
	form := url.Values{"token": {s.setup}, "name": {"ada"}, "password": {"correct horse"}, "password2": {"correct horsE"}}
	wantStatus(t, c.post("/setup", form), http.StatusBadRequest, "differ")
	form.Set("password2", "correct horse")
	form.Set("name", "a d a")
	wantStatus(t, c.post("/setup", form), http.StatusBadRequest, "name: must be 1 to 64")
	form.Set("name", "ada")
	w := c.post("/setup", form)
	if w.Code != http.StatusSeeOther || c.cookie == nil {
		t.Fatalf("setup: %d %s", w.Code, w.Body.String())
	}
	if !s.acc.HasUsers() {
		t.Fatal("no account after setup")
	}
	wantStatus(t, c.get("/devices"), http.StatusOK) // signed in
	// Used twice: refused.
	wantStatus(t, s.client().get(link), http.StatusGone, "already used")
	form.Set("name", "eve")
	wantStatus(t, s.client().post("/setup", form), http.StatusGone, "already used")
	if len(s.acc.Users()) != 1 {
		t.Fatalf("users %+v", s.acc.Users())
	}
	// Without a setup link, /setup is not found.
	s2 := newStack(t, stackOpts{})
	wantStatus(t, s2.client().post("/setup", url.Values{"token": {"x"}}), http.StatusNotFound)
	// Once an account exists by other means, the link is spent.
	s3 := newStack(t, stackOpts{setup: true})
	s3.addUser("ada", "correct horse")
	wantStatus(t, s3.client().get("/setup?token="+s3.setup), http.StatusGone)
	wantStatus(t, s3.client().post("/setup", url.Values{"token": {s3.setup}, "name": {"eve"}, "password": {"abcdefgh"}, "password2": {"abcdefgh"}}), http.StatusGone)
}

func TestQueryErrors(t *testing.T) {
	_, c := seeded(t, stackOpts{})
	tests := []struct {
		path, want string
	}{
		{"/devices?colour=red", "Unknown query parameter"},
		{"/devices?presence=asleep", "Presence must be"},
		{"/devices?network=10.0.0", "CIDR prefix"},
		{"/devices?sort=vendor", "Sort by"},
		{"/devices?limit=0", "limit"},
		{"/devices?limit=5000", "limit"},
		{"/devices?watched=perhaps", "true or false"},
		{"/devices?q=a&q=b", "more than once"},
		{"/devices?cursor=garbage", "not valid any more"},
		{"/changes?kind=device.exploded", "Unknown change kind"},
		{"/changes?since=yesterday", "must be a date"},
		{"/changes?cursor=garbage", "not valid any more"},
		{"/scans?until=soon", "must be a date"},
		{"/groups?x=1", "Unknown query parameter"},
		{"/stats?x=1", "Unknown query parameter"},
		{"/settings?x=1", "Unknown query parameter"},
		{"/tokens?x=1", "Unknown query parameter"},
		{"/users?x=1", "Unknown query parameter"},
		{"/devices/x?y=1", "Unknown query parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			wantStatus(t, c.get(tc.path), http.StatusBadRequest, tc.want)
		})
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	_, c := seeded(t, stackOpts{})
	wantStatus(t, c.get("/no/such/page"), http.StatusNotFound, "There is no page at /no/such/page")
	req := httptest.NewRequest(http.MethodDelete, "/devices", nil)
	w := c.do(req)
	wantStatus(t, w, http.StatusMethodNotAllowed, "not allowed")
	if !strings.Contains(w.Header().Get("Allow"), "GET") {
		t.Errorf("Allow %q", w.Header().Get("Allow"))
	}
	w = c.post("/settings", nil)
	wantStatus(t, w, http.StatusMethodNotAllowed)
	// An oversized form is refused before anything is decided.
	big := url.Values{"label": {strings.Repeat("x", 70<<10)}}
	wantStatus(t, c.post("/devices/x", big), http.StatusBadRequest, "too large")
}

func TestPagingAndSorting(t *testing.T) {
	s := newStack(t, stackOpts{})
	s.addUser("ada", "correct horse")
	var hosts []events.SweepHost
	for i := 1; i <= 25; i++ {
		hosts = append(hosts, host(i, ""))
	}
	s.sweep(t0.Add(-time.Hour), hosts...)
	c := s.client()
	c.signIn("ada", "correct horse")
	w := c.get("/devices?limit=10&sort=ip")
	wantStatus(t, w, http.StatusOK, "10 shown, more on the next page", "First seen", "Address ▲")
	next := nextRE.FindStringSubmatch(w.Body.String())
	if next == nil {
		t.Fatal("no next link")
	}
	w = c.get(htmlUnescape(next[1]))
	wantStatus(t, w, http.StatusOK, "10.0.0.11", "« First page")
	if strings.Contains(w.Body.String(), ">10.0.0.1<") {
		t.Error("page 2 repeats page 1")
	}
}

var nextRE = regexpMust(`<a href="([^"]+)" id="next">`)

func TestTimesInLocation(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	s, c := seeded(t, stackOpts{cfg: ui.Config{Location: berlin}})
	// t0-2h is 07:00 UTC = 08:00 CET.
	wantStatus(t, c.get("/devices/"+s.deviceID("10.0.0.3")), http.StatusOK, "2026-03-10 08:00:00 CET")
}

func TestSettingsAreEscaped(t *testing.T) {
	_, c := seeded(t, stackOpts{cfg: ui.Config{Settings: "notify:\n  url: <script>alert(1)</script>\n"}})
	w := c.get("/settings")
	wantStatus(t, w, http.StatusOK, "&lt;script&gt;")
	if strings.Contains(w.Body.String(), "<script>") {
		t.Fatal("settings not escaped")
	}
}

// failing wraps the read side and fails every list.
type failing struct{ ui.Inventory }

var errDisk = errors.New("bolt: read /var/lib/jocasta/jocasta.db: input/output error")

func (failing) Stats(context.Context) (projections.Stats, error) { return projections.Stats{}, errDisk }
func (failing) ListScans(context.Context, projections.ScanFilter) (projections.Page[projections.Scan], error) {
	return projections.Page[projections.Scan]{}, errDisk
}

// failingWrites fails every device edit as a failed commit.
type failingWrites struct{ ui.Commander }

func (failingWrites) SetWatch(context.Context, string, string, bool) (projections.WatchState, error) {
	return projections.WatchState{}, projections.ErrWriteFailed
}

func (failingWrites) EditDevice(context.Context, string, string, command.DeviceEdit) (projections.Device, error) {
	return projections.Device{}, errors.New("command: wait for the read models: context deadline exceeded")
}

func TestServerFailures(t *testing.T) {
	s, c := seeded(t, stackOpts{
		wrapInv: func(i ui.Inventory) ui.Inventory { return failing{i} },
		wrapCmd: func(c ui.Commander) ui.Commander { return failingWrites{c} },
	})
	id := s.deviceID("10.0.0.1")
	for _, path := range []string{"/stats", "/scans"} {
		w := c.get(path)
		wantStatus(t, w, http.StatusInternalServerError, "failed to answer")
		if strings.Contains(w.Body.String(), "input/output") || strings.Contains(w.Body.String(), "/var/lib") {
			t.Errorf("%s leaks the internal error", path)
		}
	}
	wantStatus(t, c.post("/devices/"+id+"/watch", url.Values{"watch": {"yes"}}), http.StatusServiceUnavailable, "failed to save")
	w := c.post("/devices/"+id, url.Values{"label": {"x"}})
	wantStatus(t, w, http.StatusInternalServerError)
	if strings.Contains(w.Body.String(), "deadline") {
		t.Error("the edit failure leaks its error")
	}
}

func TestConfigAndDepsChecked(t *testing.T) {
	s := newStack(t, stackOpts{})
	tests := []struct {
		name string
		cfg  ui.Config
		deps ui.Deps
		want string
	}{
		{"no lifetime", ui.Config{IdleTimeout: time.Hour}, ui.Deps{Inventory: s.reader, Accounts: s.acc, Commander: s.cmd}, "session_lifetime"},
		{"no idle", ui.Config{SessionLifetime: time.Hour}, ui.Deps{Inventory: s.reader, Accounts: s.acc, Commander: s.cmd}, "idle_timeout"},
		{"no inventory", defaultConfig(), ui.Deps{Accounts: s.acc, Commander: s.cmd}, "Inventory"},
		{"no accounts", defaultConfig(), ui.Deps{Inventory: s.reader, Commander: s.cmd}, "Accounts"},
		{"no commander", defaultConfig(), ui.Deps{Inventory: s.reader, Accounts: s.acc}, "Commander"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ui.New(tc.cfg, tc.deps)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
