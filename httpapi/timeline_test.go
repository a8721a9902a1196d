package httpapi_test

import (
	"strings"
	"testing"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
)

func TestDeviceTimeline(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", "/api/devices/dev-nas/timeline?limit=2", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	page := decode[projections.Page[httpapi.TimelineItem]](t, body)
	if len(page.Items) != 2 || page.Items[0].Kind != projections.ChangeEdited || page.Items[1].Kind != projections.ChangeDiscovered ||
		page.NextCursor == nil || !page.Items[0].Time.After(page.Items[1].Time) {
		t.Fatalf("first page: %s", body)
	}
	// The traffic hours are older: on the next page.
	resp, body = e.do("GET", "/api/devices/dev-nas/timeline?limit=2&cursor="+*page.NextCursor, "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	next := decode[projections.Page[httpapi.TimelineItem]](t, body)
	if len(next.Items) != 1 || next.Items[0].Kind != "traffic.hour" || !strings.Contains(next.Items[0].Summary, "in,") || next.NextCursor != nil {
		t.Fatalf("second page: %s", body)
	}
	resp, body = e.do("GET", "/api/devices/dev-nas/timeline?cursor=bogus", "", bearer(tokRead))
	wantProblem(t, resp, body, 400, "invalid-query")
	resp, body = e.do("GET", "/api/devices/dev-none/timeline", "", bearer(tokRead))
	wantProblem(t, resp, body, 404, "device-not-found")
	resp, body = e.do("GET", "/api/devices/dev-nas/timeline?since=2020-01-01T00:00:00Z", "", bearer(tokRead))
	wantProblem(t, resp, body, 400, "invalid-query")
}

// With lookups recorded, each hour of them is one timeline item.
func TestDeviceTimelineDNS(t *testing.T) {
	e, _ := newDNSEnv(t)
	resp, body := e.do("GET", "/api/devices/dev-nas/timeline", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	page := decode[projections.Page[httpapi.TimelineItem]](t, body)
	var dnsItems []httpapi.TimelineItem
	for _, it := range page.Items {
		if it.Kind == "dns.hour" {
			dnsItems = append(dnsItems, it)
		}
	}
	if len(dnsItems) != 1 || dnsItems[0].Summary != "5 lookups (3 blocked): ads.example.net, example.com" {
		t.Fatalf("dns items %+v\n%s", dnsItems, body)
	}
}
