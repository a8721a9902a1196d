package httpapi_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
)

func TestHealth(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	t.Run("livez", func(t *testing.T) {
		resp, body := e.do("GET", "/api/livez", "")
		wantStatus(t, resp, body, 200)
		if got := decode[map[string]string](t, body); got["status"] != "ok" {
			t.Fatalf("body %s", body)
		}
	})
	t.Run("readyz before and after", func(t *testing.T) {
		e.ready.set(false)
		resp, body := e.do("GET", "/api/readyz", "")
		wantProblem(t, resp, body, 503, "not-ready")
		if resp.Header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
		e.ready.set(true)
		resp, body = e.do("GET", "/api/readyz", "")
		wantStatus(t, resp, body, 200)
		if got := decode[map[string]string](t, body); got["status"] != "ready" {
			t.Fatalf("body %s", body)
		}
	})
	t.Run("openapi.json", func(t *testing.T) {
		resp, body := e.do("GET", "/api/openapi.json", "")
		wantStatus(t, resp, body, 200)
		var doc struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.OpenAPI != "3.1.0" || len(doc.Paths) != 23 { // 20 + merge, unmerge (merge.go) + diff (diff.go)
			t.Fatalf("openapi %q with %d paths", doc.OpenAPI, len(doc.Paths))
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		resp, body := e.do("HEAD", "/api/livez", "")
		wantStatus(t, resp, body, 200)
		if len(body) != 0 || resp.Header.Get("Content-Length") != `15` {
			t.Fatalf("HEAD body %q, Content-Length %q", body, resp.Header.Get("Content-Length"))
		}
	})
	t.Run("no token needed, no-store", func(t *testing.T) {
		resp, _ := e.do("GET", "/api/livez", "")
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("headers %v", resp.Header)
		}
	})
}

func TestStatsAndGroups(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	t.Run("stats", func(t *testing.T) {
		resp, body := e.do("GET", "/api/stats", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		st := decode[projections.Stats](t, body)
		if st.Devices != 3 || st.NewestDevice == nil || st.NewestDevice.ID != "dev-nas" {
			t.Fatalf("stats %+v", st)
		}
		// Nil maps become {} and CEST times UTC.
		if !strings.Contains(string(body), `"by_network":{}`) || !strings.Contains(string(body), `"first_seen":"2026-03-01T10:00:00Z"`) {
			t.Fatalf("body %s", body)
		}
	})
	t.Run("groups paged by name", func(t *testing.T) {
		resp, body := e.do("GET", "/api/groups?limit=2", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p := decode[projections.Page[projections.Group]](t, body)
		if len(p.Items) != 2 || p.Items[0].Name != "iot" || p.Items[1].Name != "lab" || p.NextCursor == nil {
			t.Fatalf("page %+v", p)
		}
		resp, body = e.do("GET", "/api/groups?limit=2&cursor="+*p.NextCursor, "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p = decode[projections.Page[projections.Group]](t, body)
		if len(p.Items) != 1 || p.Items[0].Name != "servers" || p.NextCursor != nil {
			t.Fatalf("page 2 %+v", p)
		}
		resp, body = e.do("GET", "/api/groups", "", bearer(tokWrite))
		wantStatus(t, resp, body, 200)
		if p := decode[projections.Page[projections.Group]](t, body); len(p.Items) != 3 {
			t.Fatalf("all groups %+v", p)
		}
	})
}

func TestListDevices(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	t.Run("defaults", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p := decode[projections.Page[projections.Device]](t, body)
		if len(p.Items) != 3 || p.NextCursor != nil {
			t.Fatalf("page %+v", p)
		}
		want := projections.DeviceFilter{Sort: "name", Limit: 100}
		if diff := cmp.Diff(want, e.inv.deviceFilter); diff != "" {
			t.Fatalf("filter (-want +got):\n%s", diff)
		}
		// dev-phone has nil collections: they must be [] and {}.
		if !strings.Contains(string(body), `"id":"dev-phone","name":"phone","names":{}`) ||
			!strings.Contains(string(body), `"addresses":[],"ports":[],"services":[],"sources":[],"attached_to":null,"coverage":null,"evidence":{}`) {
			t.Fatalf("nil collections not normalised: %s", body)
		}
	})
	t.Run("every filter", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices?q=nas&group=lab&presence=online&network=192.168.1.7/24&watched=true&ignored=false&sort=-last_seen&limit=2&cursor=c1", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		want := projections.DeviceFilter{
			Q: "nas", Group: "lab", Presence: "online", Network: ptr(netip.MustParsePrefix("192.168.1.0/24")),
			Watched: ptr(true), Ignored: ptr(false), Sort: "-last_seen", Limit: 2, Cursor: "c1",
		}
		if diff := cmp.Diff(want, e.inv.deviceFilter, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
			t.Fatalf("filter (-want +got):\n%s", diff)
		}
	})
	t.Run("empty q is no filter", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices?q=", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
	})
	t.Run("paging", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices?limit=1", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		p := decode[projections.Page[projections.Device]](t, body)
		if len(p.Items) != 1 || p.NextCursor == nil || *p.NextCursor != "c1" {
			t.Fatalf("page %+v", p)
		}
	})
}

func TestGetDevice(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", "/api/devices/dev-nas", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	d := decode[projections.Device](t, body)
	if d.ID != "dev-nas" || *d.Group != "lab" || d.AttachedTo.Port != "ether3" {
		t.Fatalf("device %+v", d)
	}
	for _, s := range []string{`"first_seen":"2026-03-01T10:00:00Z"`, `"last_seen":"2026-03-01T11:00:00Z"`, `"last_confirmed":"2026-03-01T10:00:00Z"`} {
		if !strings.Contains(string(body), s) {
			t.Fatalf("want %s (UTC) in %s", s, body)
		}
	}
	// The fixture's CEST times were not changed in place.
	if _, off := e.inv.devices["dev-nas"].Addresses[0].FirstSeen.Zone(); off == 0 {
		t.Fatal("normalising changed the inventory's own slice")
	}
	resp, body = e.do("GET", "/api/devices/dev-switch", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), `"retired_at":"2026-03-01T10:00:00Z"`) {
		t.Fatalf("retired_at not UTC: %s", body)
	}
	resp, body = e.do("HEAD", "/api/devices/dev-nas", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	if len(body) != 0 {
		t.Fatal("HEAD with body")
	}
}

func TestPatchDevice(t *testing.T) {
	tests := []struct {
		name  string
		ct    string
		body  string
		want  command.DeviceEdit
		check func(t *testing.T, d projections.Device)
	}{
		{
			name: "set, clear and flag", ct: "application/json",
			body: `{"label": "storage", "notes": null, "ignored": true}`,
			want: command.DeviceEdit{Label: ptr("storage"), Ignored: ptr(true), Clear: []string{"notes"}},
			check: func(t *testing.T, d projections.Device) {
				if d.Label == nil || *d.Label != "storage" || !d.Ignored || d.Notes != nil || *d.Group != "lab" {
					t.Fatalf("device %+v", d)
				}
			},
		},
		{
			name: "merge patch with charset", ct: "application/merge-patch+json; charset=UTF-8",
			body: `{"group": null, "type": "nas", "notes": "rack 2\nshelf 3"}`,
			want: command.DeviceEdit{Type: ptr("nas"), Notes: ptr("rack 2\nshelf 3"), Clear: []string{"group"}},
			check: func(t *testing.T, d projections.Device) {
				if d.Group != nil || *d.Type != "nas" {
					t.Fatalf("device %+v", d)
				}
			},
		},
		{
			name: "null ignored is false; 128 characters", ct: "application/json",
			body:  `{"ignored": null, "label": "` + strings.Repeat("é", 128) + `"}`,
			want:  command.DeviceEdit{Ignored: ptr(false), Label: ptr(strings.Repeat("é", 128))},
			check: func(t *testing.T, d projections.Device) {},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, httpapi.Config{})
			resp, body := e.do("PATCH", "/api/devices/dev-nas", tc.body, bearer(tokWrite), contentType(tc.ct))
			wantStatus(t, resp, body, 200)
			tc.check(t, decode[projections.Device](t, body))
			if e.cmd.actor != "ansible (t-write)" {
				t.Fatalf("actor %q, want the token's name and id", e.cmd.actor)
			}
			if diff := cmp.Diff(tc.want, *e.cmd.edit); diff != "" {
				t.Fatalf("edit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatchWatch(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("PATCH", "/api/devices/dev-nas/watch", `{"watched": false}`, bearer(tokWrite))
	wantStatus(t, resp, body, 200)
	if got := decode[projections.WatchState](t, body); got != (projections.WatchState{Watched: false, Presence: "online"}) {
		t.Fatalf("watch state %+v", got)
	}
	if e.cmd.actor != "ansible (t-write)" || e.cmd.watched == nil || *e.cmd.watched {
		t.Fatalf("commander got actor %q watched %v", e.cmd.actor, e.cmd.watched)
	}
	resp, body = e.do("PATCH", "/api/devices/dev-phone/watch", `{"watched": true}`, bearer(tokWrite), contentType("application/merge-patch+json"))
	wantStatus(t, resp, body, 200)
	if got := decode[projections.WatchState](t, body); got != (projections.WatchState{Watched: true, Presence: "offline"}) {
		t.Fatalf("watch state %+v", got)
	}
}

func TestChangeLogAndScans(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	since := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t.Run("events", func(t *testing.T) {
		resp, body := e.do("GET", "/api/events?device=dev-nas&kind=device.edited&kind=device.online&since=2026-03-01T10:00:00%2B02:00&until=2026-03-01T12:00:00Z&limit=5", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		want := projections.EventFilter{Device: "dev-nas", Kinds: []string{"device.edited", "device.online"}, Since: &since, Until: &until, Limit: 5}
		if diff := cmp.Diff(want, e.inv.eventFilter); diff != "" {
			t.Fatalf("filter (-want +got):\n%s", diff)
		}
		p := decode[projections.Page[projections.ChangeEntry]](t, body)
		if len(p.Items) != 2 || p.Items[0].Actor != "ansible" {
			t.Fatalf("page %+v", p)
		}
		if !strings.Contains(string(body), `"time":"2026-03-01T08:01:00Z"`) || !strings.Contains(string(body), `"data":{"old":null,"new":"storage"}`) {
			t.Fatalf("body %s", body)
		}
	})
	t.Run("device events", func(t *testing.T) {
		resp, body := e.do("GET", "/api/devices/dev-nas/events?kind=device.discovered&limit=1", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		want := projections.EventFilter{Device: "dev-nas", Kinds: []string{"device.discovered"}, Limit: 1}
		if diff := cmp.Diff(want, e.inv.eventFilter); diff != "" {
			t.Fatalf("filter (-want +got):\n%s", diff)
		}
		if p := decode[projections.Page[projections.ChangeEntry]](t, body); len(p.Items) != 1 || p.NextCursor == nil {
			t.Fatalf("page %+v", p)
		}
	})
	t.Run("scans", func(t *testing.T) {
		resp, body := e.do("GET", "/api/scans?source=sweep:host&since=2026-03-01T08:00:00Z&until=2026-03-01T12:00:00Z", "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		want := projections.ScanFilter{Source: "sweep:host", Since: &since, Until: &until, Limit: 100}
		if diff := cmp.Diff(want, e.inv.scanFilter); diff != "" {
			t.Fatalf("filter (-want +got):\n%s", diff)
		}
		if !strings.Contains(string(body), `"errors":[]`) || !strings.Contains(string(body), `"networks":[]`) || !strings.Contains(string(body), `"started":"2026-03-01T10:00:00Z","finished":"2026-03-01T10:00:00Z"`) {
			t.Fatalf("body %s", body)
		}
	})
}

func TestTrafficAndDNS(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	tests := []struct {
		path, detail string
	}{
		// traffic: see TestTrafficNotRecorded (this env has a traffic model)
		{"/api/devices/dev-nas/dns?q=example.com", "no DNS lookups are recorded: enable a dnsnode, dnsfilter1 or dnsfilter2 plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := e.do("GET", tc.path, "", bearer(tokRead))
			p := wantProblem(t, resp, body, 404, "not-recorded")
			if p.Detail != tc.detail {
				t.Fatalf("detail %q, want %q", p.Detail, tc.detail)
			}
		})
	}
}
