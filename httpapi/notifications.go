package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
)

// Notifications answers /api/notifications: the configured destinations,
// their rules (set through the write side, events/command), ledgers,
// test messages and re-deliveries. Methods return projections.ErrNotFound
// for a destination that is not configured and *command.Invalid for rules
// the write side refuses.
type Notifications interface {
	Destinations(ctx context.Context) ([]notify.View, error)
	Destination(ctx context.Context, name string) (notify.View, error)
	SetRules(ctx context.Context, actor, name string, rules []events.NotifyRule) (notify.View, error)
	Ledger(ctx context.Context, name string, f notify.LedgerFilter) (projections.Page[notify.Record], error)
	Test(ctx context.Context, name string) (notify.Attempt, error)
	Redeliver(ctx context.Context, name, id string) (int, error)
}

var destinationName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func errNoDestination(name string) *problem {
	return newProblem(http.StatusNotFound, slugNotFound, "Notification destination not found",
		fmt.Sprintf("no destination is configured as notify.%s: list them with GET /api/notifications", name))
}

// destination reads the {id} path variable as a destination name. A
// server built without Notifications has no destination.
func (s *server) destination(r *http.Request) (string, error) {
	if s.notes == nil {
		return "", errPathNotFound(r.URL.Path)
	}
	name, err := deviceID(r) // the one reader of path variables
	if err != nil || !destinationName.MatchString(name) {
		return "", errNoDestination(name)
	}
	return name, nil
}

func (s *server) notifyErr(name string, err error) error {
	if errors.Is(err, projections.ErrNotFound) {
		return errNoDestination(name)
	}
	if errors.Is(err, notify.ErrDisabled) {
		return newProblem(http.StatusConflict, slugDestinationDisabled, "Destination disabled",
			fmt.Sprintf("notify.%s has enabled: false, so nothing is sent to it: set notify.%s.enabled to true (or remove it) and restart serve", name, name))
	}
	return fmt.Errorf("httpapi: notification destination %s: %w", name, err)
}

func (s *server) listNotifications(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	if s.notes == nil {
		return errPathNotFound(r.URL.Path)
	}
	views, err := s.notes.Destinations(r.Context())
	if err != nil {
		return fmt.Errorf("httpapi: listing notification destinations: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, projections.Page[notify.View]{Items: views})
}

func (s *server) getNotification(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	v, err := s.notes.Destination(r.Context(), name)
	if err != nil {
		return s.notifyErr(name, err)
	}
	return writeJSON(w, r, http.StatusOK, v)
}

// putNotification replaces a destination's rules: {"rules": [...]}.
// The change is a notify.rules_set event with the token as actor.
func (s *server) putNotification(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	rules, err := decodeRules(body)
	if err != nil {
		return err
	}
	if _, err := s.notes.Destination(r.Context(), name); err != nil {
		return s.notifyErr(name, err)
	}
	p, _ := PrincipalFromContext(r.Context())
	v, err := s.notes.SetRules(r.Context(), TokenActor(p), name, rules)
	if err != nil {
		return s.notifyErr(name, err)
	}
	return writeJSON(w, r, http.StatusOK, v)
}

// decodeRules reads {"rules": [{"kinds": [...], "scope": ..., "group":
// ..., "network": ...}, ...]} strictly and checks it as the write side
// will.
func decodeRules(body []byte) ([]events.NotifyRule, error) {
	members, err := decodeObject(body, `{"rules": [{"kinds": ["device.discovered"], "scope": "all"}]}`)
	if err != nil {
		return nil, err
	}
	var (
		rules []events.NotifyRule
		found bool
		errs  []fieldError
	)
	for _, m := range members {
		if m.name != "rules" {
			errs = append(errs, pointerError(jsonPointer(m.name), "unknown member: send only rules"))
			continue
		}
		found = true
		dec := json.NewDecoder(bytes.NewReader(m.value))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rules); err != nil || rules == nil {
			errs = append(errs, pointerError("/rules", "must be a list of rules, each {\"kinds\": [...], \"scope\": \"all\"|\"watched\"|\"group\"|\"network\", \"group\": ..., \"network\": ...} and nothing else"))
		}
	}
	if !found && len(errs) == 0 {
		errs = append(errs, pointerError("/rules", "missing: send {\"rules\": [...]}; an empty list sends nothing"))
	}
	if len(errs) == 0 {
		for _, p := range notify.CheckRules(rules) {
			errs = append(errs, pointerError(p.Pointer, p.Detail))
		}
	}
	if len(errs) > 0 {
		return nil, fieldsProblem(errs)
	}
	return rules, nil
}

var ledgerParams = map[string]bool{"state": false, "limit": false, "cursor": false}

func (s *server) notificationLedger(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, ledgerParams)
	if err != nil {
		return err
	}
	f := notify.LedgerFilter{
		State:  q.oneOf("state", notify.StatePending, notify.StateSent, notify.StateFiltered, notify.StateDead),
		Limit:  q.limit(),
		Cursor: q.cursor(),
	}
	if err := q.err(); err != nil {
		return err
	}
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	page, err := s.notes.Ledger(r.Context(), name, f)
	if err != nil {
		return s.notifyErr(name, err)
	}
	return writeJSON(w, r, http.StatusOK, page)
}

// testNotification sends a test message now and answers the attempt.
func (s *server) testNotification(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	a, err := s.notes.Test(r.Context(), name)
	if err != nil {
		return s.notifyErr(name, err)
	}
	return writeJSON(w, r, http.StatusOK, a)
}

// redeliverNotification re-queues dead records: {"id": "..."} for one,
// {} for every dead one.
func (s *server) redeliverNotification(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	name, err := s.destination(r)
	if err != nil {
		return err
	}
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	members, err := decodeObject(body, `{"id": "<a dead record id>"} or {}`)
	if err != nil {
		return err
	}
	var id string
	for _, m := range members {
		if m.name != "id" {
			return fieldsProblem([]fieldError{pointerError(jsonPointer(m.name), "unknown member: send only id, or {} for every dead record")})
		}
		if err := json.Unmarshal(m.value, &id); err != nil || id == "" || len(id) > maxIDSize {
			return fieldsProblem([]fieldError{pointerError("/id", "must be the id of a dead ledger record (a change-log entry id)")})
		}
	}
	n, err := s.notes.Redeliver(r.Context(), name, id)
	switch {
	case errors.Is(err, notify.ErrNotDead):
		return fieldsProblem([]fieldError{pointerError("/id", "this record is not dead: only dead records are re-delivered")})
	case errors.Is(err, projections.ErrNotFound) && id != "":
		if _, derr := s.notes.Destination(r.Context(), name); derr == nil {
			return fieldsProblem([]fieldError{pointerError("/id", fmt.Sprintf("no ledger record of notify.%s has id %q", name, id))})
		}
		return errNoDestination(name)
	case err != nil:
		return s.notifyErr(name, err)
	}
	return writeJSON(w, r, http.StatusOK, map[string]int{"queued": n})
}
