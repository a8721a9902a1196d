package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// merged is how the inventory says a device id is merged into another
// (projections/inventory.MergedError): it also wraps
// projections.ErrNotFound, for callers that do not know merges.
type merged interface {
	error
	MergedInto() string
}

// mergedInto returns the device id is merged into when err says so.
func mergedInto(err error) (string, bool) {
	var m merged
	if errors.As(err, &m) {
		return m.MergedInto(), true
	}
	return "", false
}

// unknownOther is the error of a merge or unmerge whose other device no
// device has: a bad field of the request, not a refusal of the state.
func unknownOther(other string) error {
	return &Invalid{[]FieldError{{"device", fmt.Sprintf("no device has id %q: list the devices with GET /api/devices", other)}}}
}

// checkMergeInput refuses a request without the other device, or naming
// the target itself.
func checkMergeInput(into, other string) error {
	switch {
	case other == "":
		return &Invalid{[]FieldError{{"device", "required: the id of the other device"}}}
	case other == into:
		return &Invalid{[]FieldError{{"device", "is the device itself: name another device"}}}
	}
	return nil
}

// MergeDevices merges the device other into into: from then on the
// inventory shows both as into (see projections/inventory merge.go). It
// appends device.merged with actor, and returns into as shown after.
// into must be a device that is not itself merged (else the error of
// reading it: projections.ErrNotFound, or the inventory's merged error);
// other must exist (else an *Invalid on device) and not be merged into a
// third device (a *Refused naming it). Merging a device already merged into
// into appends nothing.
func (c *Commander) MergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error) {
	if err := checkMergeInput(into, other); err != nil {
		return projections.Device{}, err
	}
	err := c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Devices.Device(ctx, into); err != nil {
			return nil, err
		}
		_, err := c.Devices.Device(ctx, other)
		if root, ok := mergedInto(err); ok {
			if root == into {
				return nil, nil // already merged
			}
			return nil, refused("device %q is merged into %q: unmerge it from there first (POST /api/devices/%s/unmerge), or merge %q", other, root, root, root)
		}
		if errors.Is(err, projections.ErrNotFound) {
			return nil, unknownOther(other)
		}
		if err != nil {
			return nil, err
		}
		return c.event(events.KindDeviceMerged, events.DeviceMerged{Device: other, Into: into}, c.deviceSource(), actor, "device/"+into, into)
	})
	if err != nil {
		return projections.Device{}, err
	}
	return c.Devices.Device(ctx, into)
}

// UnmergeDevices separates other from the device it is shown as, into:
// both are shown again as if never merged (other with whatever was
// merged into it before). It appends device.unmerged with actor, and
// returns into as shown after. into must be a device that is not itself
// merged (else the error of reading it); other must exist (else an
// *Invalid on device) and be merged into it (else a *Refused).
func (c *Commander) UnmergeDevices(ctx context.Context, actor, into, other string) (projections.Device, error) {
	if err := checkMergeInput(into, other); err != nil {
		return projections.Device{}, err
	}
	err := c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Devices.Device(ctx, into); err != nil {
			return nil, err
		}
		_, err := c.Devices.Device(ctx, other)
		root, ok := mergedInto(err)
		switch {
		case ok && root == into:
			return c.event(events.KindDeviceUnmerged, events.DeviceUnmerged{Device: other, Into: into}, c.deviceSource(), actor, "device/"+into, into)
		case ok:
			return nil, refused("device %q is merged into %q, not into %q: unmerge it from %q", other, root, into, root)
		case err == nil:
			return nil, refused("device %q is not merged into another device", other)
		case errors.Is(err, projections.ErrNotFound):
			return nil, unknownOther(other)
		}
		return nil, err
	})
	if err != nil {
		return projections.Device{}, err
	}
	return c.Devices.Device(ctx, into)
}
