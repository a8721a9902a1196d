package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
)

// fakeNotifications has one destination, "phone", and "off", disabled.
type fakeNotifications struct {
	mu     sync.Mutex
	rules  []events.NotifyRule
	actor  string
	tested int
}

func (f *fakeNotifications) view() notify.View {
	target := "https://ntfy.example"
	v := notify.View{Name: "phone", Channel: "push", Enabled: true, Target: &target, Rules: notify.DefaultRules(), Default: true}
	if f.rules != nil {
		at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
		v.Rules, v.Default, v.RulesSetBy, v.RulesSetAt = f.rules, false, &f.actor, &at
	}
	return v
}

func (f *fakeNotifications) Destinations(context.Context) ([]notify.View, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []notify.View{f.view()}, nil
}

func (f *fakeNotifications) Destination(_ context.Context, name string) (notify.View, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "phone":
		return f.view(), nil
	case "off": // a destination with enabled: false
		v := f.view()
		v.Name, v.Enabled = "off", false
		return v, nil
	}
	return notify.View{}, projections.ErrNotFound
}

func (f *fakeNotifications) SetRules(_ context.Context, actor, name string, rules []events.NotifyRule) (notify.View, error) {
	if probs := notify.CheckRules(rules); len(probs) > 0 {
		return notify.View{}, &command.Invalid{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.actor = rules, actor
	return f.view(), nil
}

func (f *fakeNotifications) Ledger(_ context.Context, name string, lf notify.LedgerFilter) (projections.Page[notify.Record], error) {
	if name != "phone" {
		return projections.Page[notify.Record]{}, projections.ErrNotFound
	}
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	r := notify.Record{ID: "ev-0", State: notify.StateDead, Reason: "answered 404 Not Found", Queued: now,
		Entry:    projections.ChangeEntry{ID: "ev-0", Seq: 3, Time: now, Kind: projections.ChangeDiscovered, DeviceID: "dev-nas", Source: "sweep:lan", Actor: "sweep:lan", Summary: "new"},
		Attempts: []notify.Attempt{{Time: now, Status: 404, LatencyMS: 1.5, Error: "answered 404 Not Found"}}}
	return projections.Page[notify.Record]{Items: []notify.Record{r}}, nil
}

func (f *fakeNotifications) Test(_ context.Context, name string) (notify.Attempt, error) {
	if name == "off" {
		return notify.Attempt{}, fmt.Errorf("notify: %q: %w", name, notify.ErrDisabled)
	}
	if name != "phone" {
		return notify.Attempt{}, projections.ErrNotFound
	}
	f.mu.Lock()
	f.tested++
	f.mu.Unlock()
	return notify.Attempt{Time: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), Status: 200, LatencyMS: 2}, nil
}

func (f *fakeNotifications) Redeliver(_ context.Context, name, id string) (int, error) {
	switch {
	case name == "off":
		return 0, fmt.Errorf("notify: %q: %w", name, notify.ErrDisabled)
	case name != "phone":
		return 0, projections.ErrNotFound
	case id == "":
		return 1, nil
	case id == "ev-0":
		return 1, nil
	case id == "ev-sent":
		return 0, notify.ErrNotDead
	}
	return 0, projections.ErrNotFound
}

func notifyEnv(t *testing.T) (*env, *fakeNotifications) {
	e := newEnv(t, httpapi.Config{})
	fn := &fakeNotifications{}
	h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{Inventory: e.inv, Commander: e.cmd, Auth: e.auth, Ready: e.ready,
		Log: zerolog.New(e.logs), Now: e.clock.Now, Notifications: fn})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e, fn
}

func TestNotifications(t *testing.T) {
	e, fn := notifyEnv(t)
	resp, body := e.do("GET", "/api/notifications", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	page := decode[projections.Page[notify.View]](t, body)
	if len(page.Items) != 1 || !page.Items[0].Default || page.Items[0].Channel != "push" {
		t.Fatalf("list %s", body)
	}

	resp, body = e.do("GET", "/api/notifications/phone", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)

	good := `{"rules": [{"kinds": ["device.discovered", "device.offline"], "scope": "group", "group": "cams"}, {"kinds": ["device.port_opened"], "scope": "network", "network": "192.0.2.0/24"}]}`
	resp, body = e.do("PUT", "/api/notifications/phone", good, bearer(tokWrite))
	wantStatus(t, resp, body, 200)
	v := decode[notify.View](t, body)
	if v.Default || len(v.Rules) != 2 || v.Rules[0].Group != "cams" || !strings.HasPrefix(fn.actor, "writer") && fn.actor == "" {
		t.Fatalf("after PUT: %s (actor %q)", body, fn.actor)
	}

	resp, body = e.do("GET", "/api/notifications/phone/ledger?state=dead&limit=10", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	resp, body = e.do("POST", "/api/notifications/phone/test", "", bearer(tokWrite))
	wantStatus(t, resp, body, 200)
	if fn.tested != 1 {
		t.Fatal("test message not sent")
	}
	resp, body = e.do("POST", "/api/notifications/phone/redeliver", `{"id": "ev-0"}`, bearer(tokWrite))
	wantStatus(t, resp, body, 200)
	resp, body = e.do("POST", "/api/notifications/phone/redeliver", `{}`, bearer(tokWrite))
	wantStatus(t, resp, body, 200)
}

func TestNotificationsRefused(t *testing.T) {
	e, _ := notifyEnv(t)
	tests := []struct {
		name, method, target, body string
		tok                        string
		status                     int
		slug, pointer              string
	}{
		{"list with a query", "GET", "/api/notifications?x=1", "", tokRead, 400, "invalid-query", ""},
		{"list without token", "GET", "/api/notifications", "", "", 401, "token-missing", ""},
		{"get unknown", "GET", "/api/notifications/pager", "", tokRead, 404, "not-found", ""},
		{"get bad name", "GET", "/api/notifications/Bad%20Name", "", tokRead, 404, "not-found", ""},
		{"get with a query", "GET", "/api/notifications/phone?x=1", "", tokRead, 400, "invalid-query", ""},
		{"get without token", "GET", "/api/notifications/phone", "", "", 401, "token-missing", ""},
		{"put read token", "PUT", "/api/notifications/phone", `{"rules": []}`, tokRead, 403, "read-only-token", ""},
		{"put without token", "PUT", "/api/notifications/phone", `{"rules": []}`, "", 401, "token-missing", ""},
		{"put unknown", "PUT", "/api/notifications/pager", `{"rules": []}`, tokWrite, 404, "not-found", ""},
		{"put unknown kind", "PUT", "/api/notifications/phone", `{"rules": [{"kinds": ["device.exploded"], "scope": "all"}]}`, tokWrite, 400, "invalid-body", "/rules/0/kinds/0"},
		{"put bad scope", "PUT", "/api/notifications/phone", `{"rules": [{"kinds": ["device.online"], "scope": "some"}]}`, tokWrite, 400, "invalid-body", "/rules/0/scope"},
		{"put group missing", "PUT", "/api/notifications/phone", `{"rules": [{"kinds": ["device.online"], "scope": "group"}]}`, tokWrite, 400, "invalid-body", "/rules/0/group"},
		{"put host bits", "PUT", "/api/notifications/phone", `{"rules": [{"kinds": ["device.online"], "scope": "network", "network": "192.0.2.1/24"}]}`, tokWrite, 400, "invalid-body", "/rules/0/network"},
		{"put unknown member", "PUT", "/api/notifications/phone", `{"rules": [], "x": 1}`, tokWrite, 400, "invalid-body", "/x"},
		{"put unknown rule member", "PUT", "/api/notifications/phone", `{"rules": [{"kinds": ["device.online"], "scope": "all", "when": "now"}]}`, tokWrite, 400, "invalid-body", "/rules"},
		{"put no rules", "PUT", "/api/notifications/phone", `{}`, tokWrite, 400, "invalid-body", "/rules"},
		{"put not json", "PUT", "/api/notifications/phone", `{"rules":`, tokWrite, 400, "invalid-body", ""},
		{"ledger bad state", "GET", "/api/notifications/phone/ledger?state=lost", "", tokRead, 400, "invalid-query", ""},
		{"ledger without token", "GET", "/api/notifications/phone/ledger", "", "", 401, "token-missing", ""},
		{"ledger unknown", "GET", "/api/notifications/pager/ledger", "", tokRead, 404, "not-found", ""},
		{"test read token", "POST", "/api/notifications/phone/test", "", tokRead, 403, "read-only-token", ""},
		{"test without token", "POST", "/api/notifications/phone/test", "", "", 401, "token-missing", ""},
		{"test unknown", "POST", "/api/notifications/pager/test", "", tokWrite, 404, "not-found", ""},
		{"redeliver not dead", "POST", "/api/notifications/phone/redeliver", `{"id": "ev-sent"}`, tokWrite, 400, "invalid-body", "/id"},
		{"redeliver unknown id", "POST", "/api/notifications/phone/redeliver", `{"id": "ev-9"}`, tokWrite, 400, "invalid-body", "/id"},
		{"redeliver read token", "POST", "/api/notifications/phone/redeliver", `{}`, tokRead, 403, "read-only-token", ""},
		{"redeliver without token", "POST", "/api/notifications/phone/redeliver", `{}`, "", 401, "token-missing", ""},
		{"redeliver unknown", "POST", "/api/notifications/pager/redeliver", `{}`, tokWrite, 404, "not-found", ""},
		{"test disabled", "POST", "/api/notifications/off/test", "", tokWrite, 409, "destination-disabled", ""},
		{"redeliver disabled", "POST", "/api/notifications/off/redeliver", `{}`, tokWrite, 409, "destination-disabled", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOpt
			if tt.tok != "" {
				opts = append(opts, bearer(tt.tok))
			}
			resp, body := e.do(tt.method, tt.target, tt.body, opts...)
			p := wantProblem(t, resp, body, tt.status, tt.slug)
			if tt.pointer != "" && (len(p.Errors) == 0 || p.Errors[0].Pointer == nil || *p.Errors[0].Pointer != tt.pointer) {
				t.Errorf("errors %+v, want pointer %s", p.Errors, tt.pointer)
			}
		})
	}
	t.Run("put wrong content type", func(t *testing.T) {
		resp, body := e.do("PUT", "/api/notifications/phone", `{"rules": []}`, bearer(tokWrite), contentType("text/plain"))
		wantProblem(t, resp, body, 415, "unsupported-media-type")
	})
}

// Without Notifications (a server that sends none) the paths are 404.
func TestNotificationsAbsent(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", "/api/notifications", "", bearer(tokRead))
	wantProblem(t, resp, body, 404, "not-found")
}
