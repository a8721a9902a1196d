package ui_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/notify/webhook"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a webhook endpoint answering status (404 at first: every
// change is given up at once, dead).
type receiver struct {
	*httptest.Server
	status atomic.Int32
	got    atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.status.Store(http.StatusNotFound)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.got.Add(1)
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.Close)
	return r
}

// notifyStack is a seeded stack whose destination "hook" sends to a
// receiver, through a URL whose path and query are secret.
func notifyStack(t *testing.T) (*stack, *client, *receiver) {
	rcv := newReceiver(t)
	dest := notify.Destination{Name: "hook", Enabled: true, Timeout: time.Second,
		Webhook: &webhook.Config{URL: rcv.URL + "/secret-path?token=tok123", Secret: hookSecret}}
	s, c := seeded(t, stackOpts{notify: []notify.Destination{dest}})
	return s, c, rcv
}

// waitLedger waits until the destination's ledger counts satisfy ok.
func waitLedger(t *testing.T, s *stack, ok func(notify.Stats) bool) notify.View {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := s.hookView()
		if err != nil {
			t.Fatal(err)
		}
		if ok(v.Ledger) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger %+v", v.Ledger)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNotificationsPages(t *testing.T) {
	s, c, rcv := notifyStack(t)
	// The three discoveries of the seed are selected by the default rules
	// and given up on the receiver's 404.
	waitLedger(t, s, func(st notify.Stats) bool { return st.Dead == 3 })

	w := c.get("/notifications")
	wantStatus(t, w, http.StatusOK, `href="/notifications/hook"`, "webhook", rcv.URL, "device.discovered of every device", "the default selection")
	w = c.get("/notifications/hook")
	wantStatus(t, w, http.StatusOK, "Which changes it receives", `name="rule-0-kind" value="device.discovered" checked`,
		`name="rule-1-kind" value="device.online" checked`, `<option value="watched" selected>`, "<b>3</b> dead",
		"Re-deliver every dead record (3)", "answered 404", `aria-current="page">Notifications`)
	for _, path := range []string{"/notifications", "/notifications/hook", "/notifications/hook?state=dead"} {
		body := c.get(path).Body.String()
		for _, secret := range []string{"secret-path", "tok123", hookSecret, strings.TrimPrefix(hookSecret, "whsec_")} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q", path, secret)
			}
		}
	}

	t.Run("change the selection", func(t *testing.T) {
		form := url.Values{
			"rule-0-kind": {"device.online", "device.offline"}, "rule-0-scope": {"group"}, "rule-0-group": {"lab"}, "rule-0-network": {"ignored"},
			"rule-1-scope": {"watched"}, // no kind: dropped (the removed default rule)
			"rule-2-kind":  {"port.opened"}, "rule-2-scope": {"network"}, "rule-2-network": {"10.0.0.0/24"},
		}
		form["rule-2-kind"] = []string{projections.ChangePortOpened}
		w := c.post("/notifications/hook", form)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/notifications/hook?done=saved" {
			t.Fatalf("save: %d %q %s", w.Code, w.Header().Get("Location"), w.Body.String())
		}
		v, err := s.hookView()
		if err != nil {
			t.Fatal(err)
		}
		want := []events.NotifyRule{
			{Kinds: []string{"device.online", "device.offline"}, Scope: "group", Group: "lab"},
			{Kinds: []string{projections.ChangePortOpened}, Scope: "network", Network: "10.0.0.0/24"},
		}
		if v.Default || len(v.Rules) != 2 || !slices.Equal(v.Rules[0].Kinds, want[0].Kinds) || v.Rules[0].Group != "lab" || v.Rules[0].Network != "" ||
			v.Rules[1].Network != "10.0.0.0/24" || v.RulesSetBy == nil || *v.RulesSetBy != "ada" {
			t.Fatalf("rules %+v by %v", v.Rules, v.RulesSetBy)
		}
		wantStatus(t, c.get("/notifications/hook?done=saved"), http.StatusOK, "Saved: the destination receives", "set by ada",
			`name="rule-0-kind" value="device.offline" checked`, `value="lab"`, `name="rule-2-kind" value="device.discovered">`)
	})

	t.Run("refused selections stay on the form", func(t *testing.T) {
		tests := []struct {
			name string
			form url.Values
			code int
			want string
		}{
			{"host bits", url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"network"}, "rule-0-network": {"10.0.0.1/24"}}, 400, "Rule 1 network: &#34;10.0.0.1/24&#34; has host bits set"},
			{"no group", url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"group"}}, 400, "Rule 1 group: required with scope group"},
			{"unknown kind", url.Values{"rule-0-kind": {"device.exploded"}, "rule-0-scope": {"all"}}, 400, "is not a change kind that can be sent"},
			{"unknown scope", url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"everything"}}, 400, "want all, watched, group or network"},
			{"unknown field", url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"all"}, "url": {"http://x"}}, 400, "Unknown form field"},
			{"rule out of range", url.Values{"rule-40-kind": {"device.online"}}, 400, "Unknown form field"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wantStatus(t, c.post("/notifications/hook", tc.form), tc.code, tc.want)
			})
		}
		// Nothing changed.
		v, _ := s.hookView()
		if len(v.Rules) != 2 || v.Rules[0].Group != "lab" {
			t.Errorf("a refused form changed the rules: %+v", v.Rules)
		}
		// The refused rule is shown as entered.
		wantStatus(t, c.post("/notifications/hook", url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"network"}, "rule-0-network": {"10.0.0.1/24"}}),
			http.StatusBadRequest, `value="10.0.0.1/24"`, `<option value="network" selected>`)
	})

	t.Run("send test", func(t *testing.T) {
		before := rcv.got.Load()
		wantStatus(t, c.post("/notifications/hook/test", nil), http.StatusOK, `id="test-result"`, "The test message failed: HTTP 404")
		rcv.status.Store(http.StatusNoContent)
		wantStatus(t, c.post("/notifications/hook/test", nil), http.StatusOK, "Test message sent: HTTP 204")
		if got := rcv.got.Load() - before; got != 2 {
			t.Errorf("receiver got %d requests, want 2", got)
		}
	})

	t.Run("redeliver", func(t *testing.T) {
		rcv.status.Store(http.StatusOK)
		page, err := notify.ReadLedger(s.disp.DB(), "hook", notify.LedgerFilter{State: notify.StateDead})
		if err != nil || len(page.Items) != 3 {
			t.Fatalf("dead %+v %v", page, err)
		}
		id := page.Items[0].ID
		wantStatus(t, c.get("/notifications/hook?state=dead"), http.StatusOK, `name="id" value="`+id+`"`)
		w := c.post("/notifications/hook/redeliver", url.Values{"id": {id}})
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/notifications/hook?done=requeued" {
			t.Fatalf("redeliver one: %d %q", w.Code, w.Header().Get("Location"))
		}
		waitLedger(t, s, func(st notify.Stats) bool { return st.Sent == 1 && st.Dead == 2 })
		wantStatus(t, c.post("/notifications/hook/redeliver", url.Values{"id": {id}}), http.StatusConflict, "not dead")
		wantStatus(t, c.post("/notifications/hook/redeliver", url.Values{"id": {"no-such"}}), http.StatusNotFound, "has no ledger record")
		wantStatus(t, c.post("/notifications/hook/redeliver", url.Values{"id": {id}, "all": {"1"}}), http.StatusBadRequest, "Unknown form field")
		if w := c.post("/notifications/hook/redeliver", nil); w.Code != http.StatusSeeOther {
			t.Fatalf("redeliver all: %d", w.Code)
		}
		waitLedger(t, s, func(st notify.Stats) bool { return st.Sent == 3 && st.Dead == 0 })
		w = c.post("/notifications/hook/redeliver", nil)
		if loc := w.Header().Get("Location"); loc != "/notifications/hook?done=requeued0" {
			t.Errorf("nothing dead: %q", loc)
		}
		wantStatus(t, c.get(w.Header().Get("Location")), http.StatusOK, "Nothing was dead", "<b>3</b> sent")
	})

	t.Run("bad requests", func(t *testing.T) {
		tests := []struct {
			method, path string
			code         int
			want         string
		}{
			{"GET", "/notifications/phone", 404, "No notification destination is configured as notify.phone"},
			{"GET", "/notifications/Bad%21", 404, "No notification destination"},
			{"POST", "/notifications/phone/test", 404, "notify.phone"},
			{"POST", "/notifications/phone/redeliver", 404, "notify.phone"},
			{"POST", "/notifications/phone", 404, "notify.phone"},
			{"GET", "/notifications/hook?state=lost", 400, "The state must be"},
			{"GET", "/notifications/hook?cursor=zzz", 400, "not valid any more"},
			{"GET", "/notifications/hook?x=1", 400, "Unknown query parameter"},
			{"GET", "/notifications?x=1", 400, "Unknown query parameter"},
		}
		for _, tc := range tests {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				var w *httptest.ResponseRecorder
				switch {
				case tc.method == "GET":
					w = c.get(tc.path)
				case strings.HasSuffix(tc.path, "/test") || strings.HasSuffix(tc.path, "/redeliver"):
					w = c.post(tc.path, nil)
				default:
					w = c.post(tc.path, url.Values{"rule-0-kind": {"device.online"}, "rule-0-scope": {"all"}})
				}
				wantStatus(t, w, tc.code, tc.want)
			})
		}
	})
}

// hookView reads destination hook's view.
func (s *stack) hookView() (notify.View, error) {
	d, _ := s.disp.Destination("hook")
	return notify.ViewOf(s.disp.DB(), d, s.rules)
}

func TestNotificationsAbsent(t *testing.T) {
	_, c := seeded(t, stackOpts{})
	if body := c.get("/devices").Body.String(); strings.Contains(body, `href="/notifications"`) {
		t.Error("the menu links to a Notifications page the service does not have")
	}
	wantStatus(t, c.get("/notifications"), http.StatusNotFound, "This service has no notifications")
	wantStatus(t, c.get("/notifications/hook"), http.StatusNotFound, "No notification destination")
	wantStatus(t, c.post("/notifications/hook/test", nil), http.StatusNotFound, "No notification destination")
}

// The ledger is paged by 50, newest first; the state filter stays on the
// page links.
func TestNotificationLedgerPages(t *testing.T) {
	s, c, _ := notifyStack(t)
	var hosts []events.SweepHost
	for i := 10; i < 70; i++ {
		hosts = append(hosts, host(i, ""))
	}
	s.sweep(t0.Add(-30*time.Minute), hosts...)
	waitLedger(t, s, func(st notify.Stats) bool { return st.Dead == 63 })
	w := c.get("/notifications/hook?state=dead")
	wantStatus(t, w, http.StatusOK, "<b>63</b> dead", `<span aria-current="true"><b>63</b> dead</span>`)
	rows := strings.Count(w.Body.String(), `<tr class="st-dead">`)
	next := regexpMust(`<a href="([^"]+)" id="next">`).FindStringSubmatch(w.Body.String())
	if rows != 50 || next == nil {
		t.Fatalf("first page: %d rows, next %v", rows, next)
	}
	link := htmlUnescape(next[1])
	if !strings.HasPrefix(link, "/notifications/hook?") || !strings.Contains(link, "state=dead") || !strings.Contains(link, "cursor=") {
		t.Fatalf("next link %q", link)
	}
	w = c.get(link)
	wantStatus(t, w, http.StatusOK, `<a href="/notifications/hook?state=dead">First page</a>`)
	if rows := strings.Count(w.Body.String(), `<tr class="st-dead">`); rows != 13 || strings.Contains(w.Body.String(), `id="next"`) {
		t.Fatalf("second page: %d rows", rows)
	}
	// The other states' counts link to their own lists.
	wantStatus(t, c.get("/notifications/hook?state=sent"), http.StatusOK, "No delivery in state sent yet.", `href="/notifications/hook?state=dead"`)
}
