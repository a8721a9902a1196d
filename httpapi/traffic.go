package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/traffic"
)

// Traffic answers the traffic endpoints (projections/traffic). Optional:
// without it they answer 404 not-recorded. It returns
// projections.ErrNotFound for an unknown device and
// projections.ErrBadCursor for a cursor it did not issue.
type Traffic interface {
	DeviceTraffic(ctx context.Context, id string, f traffic.Filter) (projections.Page[traffic.Item], error)
	Overview(ctx context.Context, since, until time.Time, limit int) (traffic.Overview, error)
}

// Ranges of the traffic endpoints: the default when since is left out,
// and the longest allowed (each hour of it is read).
const (
	defaultTrafficRange = 24 * time.Hour
	maxTrafficRange     = 400 * 24 * time.Hour
	defaultTopLimit     = 10
)

var (
	deviceTrafficParams = map[string]bool{"since": false, "until": false, "q": false, "by": false, "limit": false, "cursor": false}
	trafficParams       = map[string]bool{"since": false, "until": false, "limit": false}
)

// trafficRange reads since and until: until defaults to now, since to a
// day before until.
func (s *server) trafficRange(q *query) (since, until time.Time) {
	sp, up := q.timeRange()
	until = s.now().UTC()
	if up != nil {
		until = *up
	}
	since = until.Add(-defaultTrafficRange)
	if sp != nil {
		since = *sp
	}
	if up == nil && sp != nil && until.Before(since) {
		q.fail("since", "later than now: give a since in the past, or an until after it")
	}
	if until.Sub(since) > maxTrafficRange {
		q.fail("since", fmt.Sprintf("the range is longer than %d days: narrow since and until", maxTrafficRange/(24*time.Hour)))
	}
	return since, until
}

// deviceTraffic answers GET /api/devices/{id}/traffic.
func (s *server) deviceTraffic(w http.ResponseWriter, r *http.Request) error {
	if s.flows == nil {
		return s.deviceActivity(r, detailNoTraffic)
	}
	q, err := parseQuery(r, deviceTrafficParams)
	if err != nil {
		return err
	}
	since, until := s.trafficRange(q)
	f := traffic.Filter{Since: since, Until: until, Q: q.text("q", true), Limit: q.limit(), Cursor: q.cursor()}
	if _, ok := q.raw("by"); ok {
		f.By = q.oneOf("by", traffic.ByPeer, traffic.ByCountry, traffic.ByHour)
	}
	if err := q.err(); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	page, err := s.flows.DeviceTraffic(r.Context(), id, f)
	switch {
	case errors.Is(err, projections.ErrNotFound):
		return errDeviceNotFound(id)
	case err != nil:
		return fmt.Errorf("httpapi: traffic of device %s: %w", id, err)
	}
	if page.Items == nil {
		page.Items = []traffic.Item{}
	}
	return writeJSON(w, r, http.StatusOK, page)
}

// trafficOverview answers GET /api/traffic.
func (s *server) trafficOverview(w http.ResponseWriter, r *http.Request) error {
	if s.flows == nil {
		q, err := parseQuery(r, trafficParams)
		if err != nil {
			return err
		}
		s.trafficRange(q)
		if err := q.err(); err != nil {
			return err
		}
		return errNotRecorded(detailNoTraffic)
	}
	q, err := parseQuery(r, trafficParams)
	if err != nil {
		return err
	}
	since, until := s.trafficRange(q)
	limit := defaultTopLimit
	if _, ok := q.raw("limit"); ok {
		limit = q.limit()
	}
	if err := q.err(); err != nil {
		return err
	}
	ov, err := s.flows.Overview(r.Context(), since, until, limit)
	if err != nil {
		return fmt.Errorf("httpapi: traffic overview: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, ov)
}
