package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/timeline"
)

// TimelineItem is one entry of a device's timeline: a change-log entry,
// or an hour of its traffic or of its DNS lookups (package
// projections/timeline reads them, for the web interface too).
type TimelineItem = timeline.Item

var timelineParams = map[string]bool{"since": false, "until": false, "limit": false, "cursor": false}

// deviceTimeline answers GET /api/devices/{id}/timeline: the device's
// changes and, where recorded, its hourly traffic and DNS totals, in one
// list, newest first.
func (s *server) deviceTimeline(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, timelineParams)
	if err != nil {
		return err
	}
	sp, up := q.timeRange()
	since, until := timeline.Range(sp, up, s.now())
	if up == nil && sp != nil && until.Before(since) {
		q.fail("since", "later than now: give a since in the past, or an until after it")
	}
	if until.Sub(since) > timeline.MaxRange {
		q.fail("since", fmt.Sprintf("the range is longer than %d days: narrow since and until", timeline.MaxRange/(24*time.Hour)))
	}
	limit := q.limit()
	cur := q.cursor()
	if timeline.CheckCursor(cur) != nil {
		q.fail("cursor", "not a cursor this endpoint gave: start again without it")
	}
	if err := q.err(); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	if _, err := s.inv.Device(r.Context(), id); err != nil {
		if errors.Is(err, projections.ErrNotFound) {
			return deviceNotFound(id, err) // device-merged for a merged id
		}
		return err
	}
	src := timeline.Sources{Changes: s.inv, Traffic: s.flows, DNS: s.dns} // nil stays nil
	out, err := timeline.Read(r.Context(), id, src, timeline.Query{Since: since, Until: until, Limit: limit, Cursor: cur})
	if err != nil {
		return fmt.Errorf("httpapi: timeline of %s: %w", id, err)
	}
	return writeJSON(w, r, http.StatusOK, out)
}
