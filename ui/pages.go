package ui

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
)

// changeKinds are the change-log kinds offered by the filter.
var changeKinds = projections.ChangeKinds()

// changesView is the Change log page.
type changesView struct {
	Entries  []projections.ChangeEntry
	Kinds    []kindOption
	Device   string
	Since    string
	Until    string
	NextURL  string
	FirstURL string
}

type kindOption struct {
	Kind     string
	Selected bool
}

func (s *Server) changesPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "kind", "device", "since", "until", "cursor", "limit")
	if err != nil {
		return err
	}
	f := projections.EventFilter{Device: q.str("device"), Cursor: q.str("cursor")}
	for _, k := range q.v["kind"] {
		if k == "" {
			continue
		}
		if !slices.Contains(changeKinds, k) {
			return errBadRequest("Unknown change kind " + k + ".")
		}
		f.Kinds = append(f.Kinds, k)
	}
	if f.Since, err = q.time("since", s.cfg.Location, false); err != nil {
		return err
	}
	if f.Until, err = q.time("until", s.cfg.Location, true); err != nil {
		return err
	}
	if f.Limit, err = q.limit(100); err != nil {
		return err
	}
	page, err := s.inv.ListEvents(r.Context(), f)
	if err != nil {
		return err
	}
	v := changesView{Entries: page.Items, Device: f.Device, Since: q.str("since"), Until: q.str("until")}
	for _, k := range changeKinds {
		v.Kinds = append(v.Kinds, kindOption{Kind: k, Selected: slices.Contains(f.Kinds, k)})
	}
	v.NextURL, v.FirstURL = pageLinks("/changes", r.URL.Query(), page.NextCursor, f.Cursor)
	s.render(w, r, http.StatusOK, "changes", v)
	return nil
}

// pageLinks are the next and first page links of a cursor-paged list.
func pageLinks(path string, base url.Values, next *string, cursor string) (nextURL, firstURL string) {
	base = cloneValues(base)
	base.Del("cursor")
	if next != nil {
		u := cloneValues(base)
		u.Set("cursor", *next)
		nextURL = path + "?" + u.Encode()
	}
	if cursor != "" {
		firstURL = path
		if len(base) > 0 {
			firstURL += "?" + base.Encode()
		}
	}
	return nextURL, firstURL
}

// scansView is the Scans page.
type scansView struct {
	Scans    []projections.Scan
	Source   string
	NextURL  string
	FirstURL string
}

func (s *Server) scansPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "source", "since", "until", "cursor", "limit")
	if err != nil {
		return err
	}
	f := projections.ScanFilter{Source: q.str("source"), Cursor: q.str("cursor")}
	if f.Since, err = q.time("since", s.cfg.Location, false); err != nil {
		return err
	}
	if f.Until, err = q.time("until", s.cfg.Location, true); err != nil {
		return err
	}
	if f.Limit, err = q.limit(50); err != nil {
		return err
	}
	page, err := s.scans.ListScans(r.Context(), f)
	if err != nil {
		return err
	}
	v := scansView{Scans: page.Items, Source: f.Source}
	v.NextURL, v.FirstURL = pageLinks("/scans", r.URL.Query(), page.NextCursor, f.Cursor)
	s.render(w, r, http.StatusOK, "scans", v)
	return nil
}

// groupsView is the Groups page.
type groupsView struct {
	Groups []groupRow
}

type groupRow struct {
	projections.Group
	URL string
}

func (s *Server) groupsPage(w http.ResponseWriter, r *http.Request) error {
	if _, err := newQuery(r); err != nil {
		return err
	}
	gs, err := s.inv.Groups(r.Context())
	if err != nil {
		return err
	}
	v := groupsView{}
	for _, g := range gs {
		v.Groups = append(v.Groups, groupRow{Group: g, URL: "/devices?group=" + url.QueryEscape(g.Name)})
	}
	s.render(w, r, http.StatusOK, "groups", v)
	return nil
}

// statsView is the Stats page.
type statsView struct {
	S        projections.Stats
	Presence []countRow
	Groups   []countRow
	Networks []countRow
	Sources  []countRow
}

type countRow struct {
	Name  string
	Count int
	URL   string
}

func countRows(m map[string]int, param string) []countRow {
	out := make([]countRow, 0, len(m))
	for k, n := range m {
		row := countRow{Name: k, Count: n}
		if param != "" {
			row.URL = "/devices?" + param + "=" + url.QueryEscape(k)
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b countRow) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func (s *Server) statsPage(w http.ResponseWriter, r *http.Request) error {
	if _, err := newQuery(r); err != nil {
		return err
	}
	st, err := s.inv.Stats(r.Context())
	if err != nil {
		return err
	}
	v := statsView{S: st, Presence: countRows(st.ByPresence, "presence"), Groups: countRows(st.ByGroup, "group"),
		Networks: countRows(st.ByNetwork, "network"), Sources: countRows(st.BySource, "")}
	s.render(w, r, http.StatusOK, "stats", v)
	return nil
}

// tokensView is the Tokens page. Secret is set only on the answer to a
// create, once.
type tokensView struct {
	Tokens  []projections.Token
	Created *projections.Token
	Secret  string
	Problem string
	Name    string
	Revoked string
}

func (s *Server) tokensPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "revoked")
	if err != nil {
		return err
	}
	v := tokensView{Tokens: s.acc.Tokens(s.now())}
	if q.str("revoked") != "" {
		v.Revoked = "Token " + q.str("revoked") + " was revoked."
	}
	s.render(w, r, http.StatusOK, "tokens", v)
	return nil
}

func (s *Server) tokenCreate(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	req := command.TokenRequest{Name: r.PostForm.Get("name"), Mode: r.PostForm.Get("mode"), Expires: r.PostForm.Get("expires")}
	tok, secret, err := s.cmd.CreateToken(r.Context(), "ui", rs.sess.User, req)
	if err != nil {
		if !isUserError(err) {
			return err
		}
		s.render(w, r, http.StatusBadRequest, "tokens", tokensView{Tokens: s.acc.Tokens(s.now()), Problem: userMessage(err), Name: req.Name})
		return nil
	}
	// Shown once: this answer is the only place the secret appears.
	s.render(w, r, http.StatusOK, "tokens", tokensView{Tokens: s.acc.Tokens(s.now()), Created: &tok, Secret: secret})
	return nil
}

func (s *Server) tokenRevoke(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	id := r.PathValue("id")
	if err := s.cmd.RevokeToken(r.Context(), "ui", rs.sess.User, id); err != nil {
		return err
	}
	http.Redirect(w, r, "/tokens?revoked="+url.QueryEscape(id), http.StatusSeeOther)
	return nil
}

// usersView is the Users page.
type usersView struct {
	Users   []userRow
	Me      string
	Problem string
	Notice  string
	Name    string
}

type userRow struct {
	access.User
	Sessions int
	LastSeen time.Time
}

func (s *Server) usersView(r *http.Request) usersView {
	now := s.now()
	counts := map[string]int{}
	last := map[string]time.Time{}
	for _, ss := range s.acc.Sessions(now) {
		counts[ss.User]++
		if ss.StartedAt.After(last[ss.User]) {
			last[ss.User] = ss.StartedAt
		}
	}
	v := usersView{Me: sessionFrom(r.Context()).sess.User}
	for _, u := range s.acc.Users() {
		v.Users = append(v.Users, userRow{User: u, Sessions: counts[u.Name], LastSeen: last[u.Name]})
	}
	return v
}

var userNotices = map[string]string{
	"added":   "The account was added.",
	"changed": "The password was changed; that account's sessions were ended.",
	"removed": "The account was removed and its sessions ended.",
}

func (s *Server) usersPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "done")
	if err != nil {
		return err
	}
	v := s.usersView(r)
	v.Notice = userNotices[q.str("done")]
	s.render(w, r, http.StatusOK, "users", v)
	return nil
}

// userCommand runs a user command and answers with the Users page: the
// refusal on the form, or a redirect that names what was done.
func (s *Server) userCommand(w http.ResponseWriter, r *http.Request, done string, run func(actor string) error) error {
	actor := sessionFrom(r.Context()).sess.User
	if err := run(actor); err != nil {
		if !isUserError(err) {
			return err
		}
		v := s.usersView(r)
		v.Problem = userMessage(err)
		v.Name = r.PostForm.Get("name")
		s.render(w, r, http.StatusBadRequest, "users", v)
		return nil
	}
	http.Redirect(w, r, "/users?done="+done, http.StatusSeeOther)
	return nil
}

func passwords(r *http.Request) (string, error) {
	p, again := r.PostForm.Get("password"), r.PostForm.Get("password2")
	if p != again {
		return "", errBadRequest("The two passwords differ.")
	}
	return p, nil
}

func (s *Server) userAdd(w http.ResponseWriter, r *http.Request) error {
	return s.userCommand(w, r, "added", func(actor string) error {
		p, err := passwords(r)
		if err != nil {
			return err
		}
		return s.cmd.AddUser(r.Context(), "ui", actor, strings.TrimSpace(r.PostForm.Get("name")), p)
	})
}

func (s *Server) userPassword(w http.ResponseWriter, r *http.Request) error {
	return s.userCommand(w, r, "changed", func(actor string) error {
		p, err := passwords(r)
		if err != nil {
			return err
		}
		return s.cmd.ChangePassword(r.Context(), "ui", actor, r.PathValue("name"), p)
	})
}

func (s *Server) userRemove(w http.ResponseWriter, r *http.Request) error {
	return s.userCommand(w, r, "removed", func(actor string) error {
		name := r.PathValue("name")
		// The last account removed here would lock everyone out: no
		// setup link is offered while serve runs (only at a start with
		// no account). The command line can still remove it.
		if us := s.acc.Users(); len(us) == 1 && us[0].Name == name {
			return &commandRefused{Msg: name + " is the only account: add another one first, or nobody can sign in again (jocasta user remove " + name + " still removes it from the command line)."}
		}
		return s.cmd.RemoveUser(r.Context(), "ui", actor, name)
	})
}

// settingsView is the Settings page.
type settingsView struct {
	Config          string
	SessionLifetime time.Duration
	IdleTimeout     time.Duration
	CookieSecure    bool
	Location        string
}

func (s *Server) settingsPage(w http.ResponseWriter, r *http.Request) error {
	if _, err := newQuery(r); err != nil {
		return err
	}
	v := settingsView{Config: s.cfg.Settings, SessionLifetime: s.cfg.SessionLifetime, IdleTimeout: s.cfg.IdleTimeout,
		CookieSecure: s.cfg.CookieSecure, Location: zoneName(s.cfg.Location, s.now())}
	s.render(w, r, http.StatusOK, "settings", v)
	return nil
}
