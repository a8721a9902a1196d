package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jocasta/jocasta/projections"
)

var deviceListParams = map[string]bool{
	"q": false, "group": false, "presence": false, "network": false,
	"watched": false, "ignored": false, "sort": false, "limit": false, "cursor": false,
}

// Sort orders of the device list; a leading "-" is descending.
var deviceSorts = []string{"name", "-name", "ip", "-ip", "first_seen", "-first_seen", "last_seen", "-last_seen"}

// parseDeviceFilter reads the query of GET /api/devices. Default sort:
// name; default limit: 100. An empty q is no filter.
func parseDeviceFilter(r *http.Request) (projections.DeviceFilter, error) {
	q, err := parseQuery(r, deviceListParams)
	if err != nil {
		return projections.DeviceFilter{}, err
	}
	f := deviceSelection(q)
	f.Sort, f.Limit, f.Cursor = q.oneOf("sort", deviceSorts...), q.limit(), q.cursor()
	if f.Sort == "" {
		f.Sort = "name"
	}
	if err := q.err(); err != nil {
		return projections.DeviceFilter{}, err
	}
	return f, nil
}

// deviceSelection reads the device list's filters (q, group, presence,
// network, watched, ignored), live or at an instant.
func deviceSelection(q *query) projections.DeviceFilter {
	return projections.DeviceFilter{
		Q:        q.text("q", true),
		Group:    q.text("group", false),
		Presence: q.oneOf("presence", projections.PresenceOnline, projections.PresenceOffline, projections.PresenceQuiet),
		Network:  q.prefix("network"),
		Watched:  q.boolean("watched"),
		Ignored:  q.boolean("ignored"),
	}
}

func (s *server) listDevices(w http.ResponseWriter, r *http.Request) error {
	if hasAt(r) {
		return s.listDevicesAt(w, r)
	}
	f, err := parseDeviceFilter(r)
	if err != nil {
		return err
	}
	if raw, ok := s.inv.(DeviceJSONReader); ok {
		return writeRawPage(w, r, func(dst []byte) ([]byte, *string, error) {
			b, next, err := raw.AppendDevicesJSON(r.Context(), dst, f)
			if err != nil {
				return b, nil, fmt.Errorf("httpapi: listing devices: %w", err)
			}
			return b, next, nil
		})
	}
	page, err := s.inv.ListDevices(r.Context(), f)
	if err != nil {
		return fmt.Errorf("httpapi: listing devices: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, pageOut(page, deviceOut))
}

// device looks up the {id} of the request; an unknown id is a 404.
func (s *server) device(r *http.Request) (projections.Device, error) {
	return lookupDevice(r, s.inv.Device)
}

// lookupDevice reads the {id} of the request with read (the typed device
// or its encoded document); an unknown id is a 404.
func lookupDevice[T any](r *http.Request, read func(ctx context.Context, id string) (T, error)) (T, error) {
	id, err := deviceID(r)
	if err != nil {
		var zero T
		return zero, err
	}
	d, err := read(r.Context(), id)
	if errors.Is(err, projections.ErrNotFound) {
		return d, deviceNotFound(id, err) // device-merged for a merged id
	}
	if err != nil {
		return d, fmt.Errorf("httpapi: reading device %s: %w", id, err)
	}
	return d, nil
}

func (s *server) getDevice(w http.ResponseWriter, r *http.Request) error {
	if hasAt(r) {
		return s.getDeviceAt(w, r)
	}
	if err := noQuery(r); err != nil {
		return err
	}
	if raw, ok := s.inv.(DeviceJSONReader); ok {
		b, err := lookupDevice(r, raw.DeviceJSON)
		if err != nil {
			return err
		}
		writeBody(w, r, http.StatusOK, contentTypeJSON, b)
		return nil
	}
	d, err := s.device(r)
	if err != nil {
		return err
	}
	return writeJSON(w, r, http.StatusOK, deviceOut(d))
}

// noQuery refuses every query parameter (for endpoints that take none).
func noQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := parseQuery(r, nil)
	if err != nil {
		return err
	}
	return q.err()
}

// patchDevice applies a user's edit. Checks in order: token (401/403),
// content type (415), size (413), body (400), device (404). The edit is
// appended as a device.edited event with the token as actor; the
// answer, the whole device, is sent only once the event is durable.
func (s *server) patchDevice(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	edit, err := decodeDeviceEdit(body)
	if err != nil {
		return err
	}
	p, _ := PrincipalFromContext(r.Context())
	d, err := s.cmd.EditDevice(r.Context(), TokenActor(p), id, edit)
	if errors.Is(err, projections.ErrNotFound) {
		return deviceNotFound(id, err) // device-merged for a merged id
	}
	if err != nil {
		return fmt.Errorf("httpapi: editing device %s: %w", id, err)
	}
	return writeJSON(w, r, http.StatusOK, deviceOut(d))
}

// patchWatch starts or stops watching a device, like patchDevice.
func (s *server) patchWatch(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	watched, err := decodeWatch(body)
	if err != nil {
		return err
	}
	p, _ := PrincipalFromContext(r.Context())
	ws, err := s.cmd.SetWatch(r.Context(), TokenActor(p), id, watched)
	if errors.Is(err, projections.ErrNotFound) {
		return deviceNotFound(id, err) // device-merged for a merged id
	}
	if err != nil {
		return fmt.Errorf("httpapi: setting watch of device %s: %w", id, err)
	}
	return writeJSON(w, r, http.StatusOK, ws)
}

var activityParams = map[string]bool{"since": false, "until": false, "q": false}

// deviceActivity answers the traffic and DNS endpoints. Until a plugin
// records them: parameters are checked (400), then the device (404
// device-not-found), then the answer is a 404 not-recorded whose detail
// names the plugin kinds that would record them.
func (s *server) deviceActivity(r *http.Request, detail string) error {
	q, err := parseQuery(r, activityParams)
	if err != nil {
		return err
	}
	q.timeRange()
	q.text("q", true)
	if err := q.err(); err != nil {
		return err
	}
	if _, err := s.device(r); err != nil {
		return err
	}
	return errNotRecorded(detail)
}
