package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
)

// Problem slugs of merging devices.
const (
	// slugDeviceMerged: the device was merged into another; the problem
	// names it in merged_into.
	slugDeviceMerged = "device-merged"
	// slugMergeRefused: the other device of a merge or unmerge is not in
	// a state that allows it (merged elsewhere, not merged). An unknown
	// other device is not a refusal but a bad body member: the
	// Commander's *command.Invalid on device, 400 invalid-body on /device.
	slugMergeRefused = "merge-refused"
)

// Merger is an optional interface of the Commander: joining devices and
// separating them again (events/command.Commander implements it). Both
// append at most one event with the given actor, return only once it is
// applied, and return the device into as the inventory shows it after.
// They return projections.ErrNotFound for an unknown into (an error that
// also has a MergedInto() string method when into is itself merged), a
// *command.Invalid for a missing or unknown other device or into itself,
// a *command.Refused when the other device cannot be merged or unmerged,
// and projections.ErrWriteFailed when the database failed to commit.
// Without it, the merge endpoints answer 404 not-found.
type Merger interface {
	MergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error)
	UnmergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error)
}

// mergedError is how the inventory says an id was merged into another
// (projections/inventory.MergedError).
type mergedError interface {
	error
	MergedInto() string
}

// deviceNotFound is the 404 of an id the inventory does not show: the
// device-merged problem, naming the device it is shown as, when err says
// the id was merged, else device-not-found.
func deviceNotFound(id string, err error) *problem {
	var m mergedError
	if errors.As(err, &m) {
		return errDeviceMerged(id, m.MergedInto())
	}
	return errDeviceNotFound(id)
}

func errDeviceMerged(id, into string) *problem {
	p := newProblem(http.StatusNotFound, slugDeviceMerged, "Device merged",
		fmt.Sprintf("device %q was merged into %q: use GET /api/devices/%s (POST /api/devices/%s/unmerge separates them)", id, into, into, into))
	p.MergedInto = into
	return p
}

func errMergeRefused(detail string) *problem {
	return newProblem(http.StatusConflict, slugMergeRefused, "Merge refused", detail)
}

// decodeMerge reads {"device": "<id>"}.
func decodeMerge(body []byte) (string, error) {
	members, err := decodeObject(body, `{"device": "<the other device id>"}`)
	if err != nil {
		return "", err
	}
	var (
		other string
		found bool
		errs  []fieldError
	)
	for _, m := range members {
		if m.name != "device" {
			errs = append(errs, pointerError(jsonPointer(m.name), "unknown member: send only device"))
			continue
		}
		if err := json.Unmarshal(m.value, &other); err != nil || other == "" || len(other) > maxIDSize {
			errs = append(errs, pointerError("/device", "must be the id of a device (a non-empty string)"))
			continue
		}
		found = true
	}
	if !found && len(errs) == 0 {
		errs = append(errs, pointerError("/device", "missing: send {\"device\": \"<id of the other device>\"}"))
	}
	if len(errs) > 0 {
		return "", fieldsProblem(errs)
	}
	return other, nil
}

// mergeDevice answers POST /api/devices/{id}/merge: the body's device
// joins {id}. Checks in order: token (401/403), content type (415), size
// (413), body (400), device {id} (404), the other device (400 on /device
// when unknown, 409 when merged into a third device). The answer is {id}
// as shown after the merge, once the event is durable.
func (s *server) mergeDevice(w http.ResponseWriter, r *http.Request) error {
	return s.merging(w, r, false)
}

// unmergeDevice answers POST /api/devices/{id}/unmerge: the body's
// device, merged into {id}, is shown on its own again. Checks as for
// mergeDevice.
func (s *server) unmergeDevice(w http.ResponseWriter, r *http.Request) error {
	return s.merging(w, r, true)
}

func (s *server) merging(w http.ResponseWriter, r *http.Request, unmerge bool) error {
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
	other, err := decodeMerge(body)
	if err != nil {
		return err
	}
	m, ok := s.cmd.(Merger)
	if !ok {
		return errPathNotFound(r.URL.Path)
	}
	do, what := m.MergeDevices, "merging"
	if unmerge {
		do, what = m.UnmergeDevices, "unmerging"
	}
	p, _ := PrincipalFromContext(r.Context())
	d, err := do(r.Context(), TokenActor(p), id, other)
	var refused *command.Refused
	switch {
	case errors.As(err, &refused):
		return errMergeRefused(refused.Msg)
	case errors.Is(err, projections.ErrNotFound):
		return deviceNotFound(id, err)
	case err != nil:
		return fmt.Errorf("httpapi: %s %s and %s: %w", what, id, other, err)
	}
	return writeJSON(w, r, http.StatusOK, deviceOut(d))
}
