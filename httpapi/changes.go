package httpapi

import (
	"fmt"
	"net/http"

	"github.com/jocasta/jocasta/projections"
)

// changeKinds are the kind values the change log knows.
var changeKinds = projections.ChangeKinds()

var (
	eventParams       = map[string]bool{"device": false, "kind": true, "since": false, "until": false, "limit": false, "cursor": false}
	deviceEventParams = map[string]bool{"kind": true, "since": false, "until": false, "limit": false, "cursor": false}
	scanParams        = map[string]bool{"source": false, "since": false, "until": false, "limit": false, "cursor": false}
)

// parseEventFilter reads the query of GET /api/events, or of GET
// /api/devices/{id}/events when device is not "" (then the device
// parameter is not taken).
func parseEventFilter(r *http.Request, device string) (projections.EventFilter, error) {
	allowed := eventParams
	if device != "" {
		allowed = deviceEventParams
	}
	q, err := parseQuery(r, allowed)
	if err != nil {
		return projections.EventFilter{}, err
	}
	f := projections.EventFilter{Device: device, Kinds: q.kinds(changeKinds), Limit: q.limit(), Cursor: q.cursor()}
	if device == "" {
		f.Device = q.text("device", false)
	}
	f.Since, f.Until = q.timeRange()
	if err := q.err(); err != nil {
		return projections.EventFilter{}, err
	}
	return f, nil
}

func (s *server) listEvents(w http.ResponseWriter, r *http.Request) error {
	f, err := parseEventFilter(r, "")
	if err != nil {
		return err
	}
	return s.writeEvents(w, r, f)
}

// deviceEvents answers a device's change log; an unknown device is a 404
// (the log of a deleted device stays readable with GET
// /api/events?device=<id>).
func (s *server) deviceEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	f, err := parseEventFilter(r, id)
	if err != nil {
		return err
	}
	if _, err := s.device(r); err != nil {
		return err
	}
	return s.writeEvents(w, r, f)
}

func (s *server) writeEvents(w http.ResponseWriter, r *http.Request, f projections.EventFilter) error {
	page, err := s.inv.ListEvents(r.Context(), f)
	if err != nil {
		return fmt.Errorf("httpapi: listing change log: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, pageOut(page, entryOut))
}

func parseScanFilter(r *http.Request) (projections.ScanFilter, error) {
	q, err := parseQuery(r, scanParams)
	if err != nil {
		return projections.ScanFilter{}, err
	}
	f := projections.ScanFilter{Source: q.text("source", false), Limit: q.limit(), Cursor: q.cursor()}
	f.Since, f.Until = q.timeRange()
	if err := q.err(); err != nil {
		return projections.ScanFilter{}, err
	}
	return f, nil
}

func (s *server) listScans(w http.ResponseWriter, r *http.Request) error {
	f, err := parseScanFilter(r)
	if err != nil {
		return err
	}
	page, err := s.scans.ListScans(r.Context(), f)
	if err != nil {
		return fmt.Errorf("httpapi: listing scans: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, pageOut(page, scanOut))
}
