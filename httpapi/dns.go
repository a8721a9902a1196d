package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
)

// DNS answers GET /api/devices/{id}/dns (projections/dns). Optional:
// without it the endpoint answers 404 not-recorded. It returns
// projections.ErrNotFound for an unknown device and
// projections.ErrBadCursor for a cursor it did not issue.
type DNS interface {
	DeviceLookups(ctx context.Context, id string, f dns.Filter) (projections.Page[dns.Item], error)
	// DeviceHours is the device's lookups summed per hour, newest hour
	// first, paged by hour (the timeline's DNS items).
	DeviceHours(ctx context.Context, id string, f dns.HourFilter) (projections.Page[dns.HourTotal], error)
}

var deviceDNSParams = map[string]bool{"since": false, "until": false, "q": false, "limit": false, "cursor": false}

// deviceDNS answers GET /api/devices/{id}/dns: the device's hourly
// lookups, newest hour first, over the same range rules as its traffic.
func (s *server) deviceDNS(w http.ResponseWriter, r *http.Request) error {
	if s.dns == nil {
		return s.deviceActivity(r, detailNoDNS)
	}
	q, err := parseQuery(r, deviceDNSParams)
	if err != nil {
		return err
	}
	since, until := s.trafficRange(q)
	f := dns.Filter{Since: since, Until: until, Q: q.text("q", true), Limit: q.limit(), Cursor: q.cursor()}
	if err := q.err(); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	page, err := s.dns.DeviceLookups(r.Context(), id, f)
	switch {
	case errors.Is(err, projections.ErrNotFound):
		return errDeviceNotFound(id)
	case err != nil:
		return fmt.Errorf("httpapi: dns of device %s: %w", id, err)
	}
	if page.Items == nil {
		page.Items = []dns.Item{}
	}
	for k := range page.Items {
		if page.Items[k].Answers == nil {
			page.Items[k].Answers = []string{}
		}
	}
	return writeJSON(w, r, http.StatusOK, page)
}
