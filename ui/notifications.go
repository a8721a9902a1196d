package ui

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
)

// ledgerPage is how many ledger records a destination's page lists.
const ledgerPage = 50

// destinationName is a notify.<name> block's name (as the API checks it).
var destinationName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// scopes are the rule scopes, in the order the form offers them.
var scopes = []struct{ Key, Label string }{
	{events.ScopeAll, "every device"},
	{events.ScopeWatched, "watched devices"},
	{events.ScopeGroup, "devices of a group"},
	{events.ScopeNetwork, "devices in a network"},
}

// notificationsView is the Notifications page: every destination.
type notificationsView struct {
	Destinations []destinationRow
}

type destinationRow struct {
	notify.View
	URL   string
	Rules []string
}

// notificationView is one destination's page: its selection as a form,
// the delivery ledger, and the outcome of a test or a re-delivery.
type notificationView struct {
	D notify.View
	// Rules are the form's rows: the destination's rules (or the
	// default selection) and one empty row to add a rule.
	Rules   []ruleRow
	Kinds   []string
	Groups  []string
	States  []stateOption
	State   string
	Ledger  []recordRow
	NextURL string
	// FirstURL leads back to the ledger's first page.
	FirstURL string
	Problem  string
	Notice   string
	// Test is the attempt of a test message just sent.
	Test *notify.Attempt
}

func (v notificationView) PageTitle() string { return "Notification destination " + v.D.Name }

type ruleRow struct {
	Index   int
	Kinds   map[string]bool
	Scope   string
	Group   string
	Network string
	Scopes  []scopeOption
}

type scopeOption struct {
	Key, Label string
	Selected   bool
}

type stateOption struct {
	Key, URL string
	Count    int
	Current  bool
}

type recordRow struct {
	notify.Record
	Last *notify.Attempt
}

var notificationNotices = map[string]string{
	"saved":     "Saved: the destination receives the selection below from now on.",
	"requeued":  "Re-queued: the dispatcher sends the record again.",
	"requeued0": "Nothing was dead: nothing was re-queued.",
}

// destination reads the {name} path value; a service with no
// notifications has no destination page.
func (s *Server) destination(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if s.notes == nil || !destinationName.MatchString(name) {
		return "", errNoDestination(name)
	}
	return name, nil
}

func errNoDestination(name string) error {
	return errNotFound("No notification destination is configured as notify." + name + ". The Notifications page lists them.")
}

// notifyErr turns an unknown destination into its 404 page.
func notifyErr(name string, err error) error {
	if errors.Is(err, projections.ErrNotFound) {
		return errNoDestination(name)
	}
	if errors.Is(err, notify.ErrDisabled) {
		return &pageError{Status: http.StatusConflict, Title: "Not done",
			Msg: "notify." + name + " has enabled: false, so nothing is sent to it. Set notify." + name + ".enabled to true (or remove it) and restart serve."}
	}
	return err
}

func (s *Server) notificationsPage(w http.ResponseWriter, r *http.Request) error {
	if _, err := newQuery(r); err != nil {
		return err
	}
	if s.notes == nil {
		return errNotFound("This service has no notifications: configure a notify.<name> block (push, webhook or http) to get one.")
	}
	ds, err := s.notes.Destinations(r.Context())
	if err != nil {
		return err
	}
	v := notificationsView{}
	for _, d := range ds {
		row := destinationRow{View: d, URL: "/notifications/" + url.PathEscape(d.Name)}
		for _, rl := range d.Rules {
			row.Rules = append(row.Rules, ruleSummary(rl))
		}
		v.Destinations = append(v.Destinations, row)
	}
	s.render(w, r, http.StatusOK, "notifications", v)
	return nil
}

// ruleSummary is a rule in a line: "device.online, device.quiet of
// watched devices".
func ruleSummary(rl notify.Rule) string {
	where := ""
	switch rl.Scope {
	case events.ScopeAll:
		where = "every device"
	case events.ScopeWatched:
		where = "watched devices"
	case events.ScopeGroup:
		where = "group " + strconv.Quote(rl.Group)
	case events.ScopeNetwork:
		where = "network " + rl.Network
	default:
		where = rl.Scope
	}
	return strings.Join(rl.Kinds, ", ") + " of " + where
}

// notificationView reads a destination's page: its view, the ledger
// filtered by the page's query, and the form's rows of rules (rules, or
// the destination's own when nil).
func (s *Server) notificationView(r *http.Request, name string, q query, rules []notify.Rule) (notificationView, error) {
	ctx := r.Context()
	d, err := s.notes.Destination(ctx, name)
	if err != nil {
		return notificationView{}, notifyErr(name, err)
	}
	v := notificationView{D: d, Kinds: notify.SelectableKinds(), State: q.str("state")}
	if v.State != "" && !slices.Contains([]string{notify.StatePending, notify.StateSent, notify.StateFiltered, notify.StateDead}, v.State) {
		return notificationView{}, errBadRequest("The state must be pending, sent, filtered or dead.")
	}
	if rules == nil {
		rules = d.Rules
		if d.Default {
			rules = notify.DefaultRules()
		}
	}
	v.Rules = ruleRows(rules)
	gs, err := s.inv.Groups(ctx)
	if err != nil {
		return notificationView{}, err
	}
	for _, g := range gs {
		v.Groups = append(v.Groups, g.Name)
	}
	base := "/notifications/" + url.PathEscape(name)
	counts := map[string]int{notify.StatePending: d.Ledger.Pending, notify.StateSent: d.Ledger.Sent,
		notify.StateFiltered: d.Ledger.Filtered, notify.StateDead: d.Ledger.Dead}
	v.States = append(v.States, stateOption{Key: "all", URL: base, Count: d.Ledger.Pending + d.Ledger.Sent + d.Ledger.Filtered + d.Ledger.Dead, Current: v.State == ""})
	for _, st := range []string{notify.StatePending, notify.StateSent, notify.StateFiltered, notify.StateDead} {
		v.States = append(v.States, stateOption{Key: st, URL: base + "?state=" + st, Count: counts[st], Current: v.State == st})
	}
	cursor := q.str("cursor")
	page, err := s.notes.Ledger(ctx, name, notify.LedgerFilter{State: v.State, Limit: ledgerPage, Cursor: cursor})
	if err != nil {
		return notificationView{}, notifyErr(name, err)
	}
	for _, rec := range page.Items {
		row := recordRow{Record: rec}
		if n := len(rec.Attempts); n > 0 {
			row.Last = &rec.Attempts[n-1]
		}
		v.Ledger = append(v.Ledger, row)
	}
	lq := url.Values{}
	if v.State != "" {
		lq.Set("state", v.State)
	}
	v.NextURL, v.FirstURL = pageLinks(base, lq, page.NextCursor, cursor)
	return v, nil
}

// ruleRows are the form's rows: one per rule and an empty one, up to
// notify.MaxRules.
func ruleRows(rules []notify.Rule) []ruleRow {
	rows := make([]ruleRow, 0, len(rules)+1)
	for i, rl := range rules {
		row := ruleRow{Index: i, Kinds: map[string]bool{}, Scope: rl.Scope, Group: rl.Group, Network: rl.Network}
		for _, k := range rl.Kinds {
			row.Kinds[k] = true
		}
		rows = append(rows, row)
	}
	if len(rows) < notify.MaxRules {
		rows = append(rows, ruleRow{Index: len(rows), Kinds: map[string]bool{}, Scope: events.ScopeAll})
	}
	for i := range rows {
		for _, sc := range scopes {
			rows[i].Scopes = append(rows[i].Scopes, scopeOption{Key: sc.Key, Label: sc.Label, Selected: sc.Key == rows[i].Scope})
		}
	}
	return rows
}

func (s *Server) notificationPage(w http.ResponseWriter, r *http.Request) error {
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	q, err := newQuery(r, "state", "cursor", "done")
	if err != nil {
		return err
	}
	v, err := s.notificationView(r, name, q, nil)
	if err != nil {
		return err
	}
	v.Notice = notificationNotices[q.str("done")]
	s.render(w, r, http.StatusOK, "notification", v)
	return nil
}

// formRules reads the rules form: rows rule-<i>-kind (repeated),
// rule-<i>-scope, rule-<i>-group and rule-<i>-network for i from 0. A
// row with no kind ticked is dropped, so that unticking every kind
// removes a rule and the empty row adds nothing. Group and network are
// kept only for the scope that takes them.
func formRules(form url.Values) ([]notify.Rule, error) {
	rules := []notify.Rule{}
	for i := 0; i <= notify.MaxRules; i++ {
		p := "rule-" + strconv.Itoa(i) + "-"
		scope, kinds := strings.TrimSpace(form.Get(p+"scope")), form[p+"kind"]
		if scope == "" && len(kinds) == 0 {
			continue
		}
		if len(kinds) == 0 {
			continue
		}
		rl := notify.Rule{Kinds: kinds, Scope: scope}
		switch scope {
		case events.ScopeGroup:
			rl.Group = strings.TrimSpace(form.Get(p + "group"))
		case events.ScopeNetwork:
			rl.Network = strings.TrimSpace(form.Get(p + "network"))
		}
		rules = append(rules, rl)
	}
	for k := range form {
		if k == formField || strings.HasPrefix(k, "rule-") && validRuleField(k) {
			continue
		}
		return nil, errBadRequest("Unknown form field " + strconv.Quote(k) + ".")
	}
	return rules, nil
}

var ruleField = regexp.MustCompile(`^rule-(\d{1,2})-(kind|scope|group|network)$`)

func validRuleField(k string) bool {
	m := ruleField.FindStringSubmatch(k)
	if m == nil {
		return false
	}
	i, _ := strconv.Atoi(m[1])
	return i <= notify.MaxRules
}

// rulesProblem says what CheckRules found, in the form's words (rule
// numbers from 1).
func rulesProblem(ps []notify.FieldProblem) string {
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		parts := strings.Split(strings.TrimPrefix(p.Pointer, "/"), "/")
		where := "Rules"
		if len(parts) >= 2 {
			if i, err := strconv.Atoi(parts[1]); err == nil {
				where = "Rule " + strconv.Itoa(i+1)
			}
			if len(parts) >= 3 {
				where += " " + parts[2]
			}
		}
		msgs = append(msgs, where+": "+p.Detail)
	}
	return strings.Join(msgs, "; ")
}

// notificationRules replaces the destination's selection with the form's
// rules, as PUT /api/notifications/{name}, with the signed-in user as
// the actor. A refused selection is shown on the form, as entered.
func (s *Server) notificationRules(w http.ResponseWriter, r *http.Request) error {
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	rules, err := formRules(r.PostForm)
	if err != nil {
		return err
	}
	problem := ""
	if ps := notify.CheckRules(rules); len(ps) > 0 {
		problem = rulesProblem(ps)
	} else if _, err := s.notes.SetRules(r.Context(), sessionFrom(r.Context()).sess.User, name, rules); err != nil {
		if errors.Is(err, projections.ErrNotFound) || !isUserError(err) {
			return notifyErr(name, err)
		}
		problem = userMessage(err)
	}
	if problem != "" {
		v, err := s.notificationView(r, name, query{v: url.Values{}}, rules)
		if err != nil {
			return err
		}
		v.Problem = problem
		s.render(w, r, http.StatusBadRequest, "notification", v)
		return nil
	}
	http.Redirect(w, r, "/notifications/"+url.PathEscape(name)+"?done=saved", http.StatusSeeOther)
	return nil
}

// notificationTest sends a test message now and shows its attempt.
func (s *Server) notificationTest(w http.ResponseWriter, r *http.Request) error {
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	a, err := s.notes.Test(r.Context(), name)
	if err != nil {
		return notifyErr(name, err)
	}
	v, err := s.notificationView(r, name, query{v: url.Values{}}, nil)
	if err != nil {
		return err
	}
	v.Test = &a
	s.render(w, r, http.StatusOK, "notification", v)
	return nil
}

// notificationRedeliver re-queues the dead record of the form's id, or
// every dead record when it has none.
func (s *Server) notificationRedeliver(w http.ResponseWriter, r *http.Request) error {
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	for k := range r.PostForm {
		if k != formField && k != "id" {
			return errBadRequest("Unknown form field " + strconv.Quote(k) + ".")
		}
	}
	id := strings.TrimSpace(r.PostForm.Get("id"))
	if len(id) > 128 {
		return errBadRequest("The record id is too long.")
	}
	n, err := s.notes.Redeliver(r.Context(), name, id)
	switch {
	case errors.Is(err, notify.ErrNotDead):
		return &pageError{Status: http.StatusConflict, Title: "Not done", Msg: "This record is not dead: only dead records are re-delivered."}
	case errors.Is(err, projections.ErrNotFound) && id != "":
		if _, derr := s.notes.Destination(r.Context(), name); derr == nil {
			return errNotFound("notify." + name + " has no ledger record " + strconv.Quote(id) + ".")
		}
		return errNoDestination(name)
	case err != nil:
		return notifyErr(name, err)
	}
	done := "requeued"
	if n == 0 {
		done = "requeued0"
	}
	http.Redirect(w, r, "/notifications/"+url.PathEscape(name)+"?done="+done, http.StatusSeeOther)
	return nil
}
