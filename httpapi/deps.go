package httpapi

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
)

// Inventory answers the read endpoints. Implementations return
// projections.ErrNotFound for an unknown device and projections.ErrBadCursor
// for a cursor they did not issue. Every method must be safe for concurrent
// use and must honour ctx.
type Inventory interface {
	ListDevices(ctx context.Context, f projections.DeviceFilter) (projections.Page[projections.Device], error)
	Device(ctx context.Context, id string) (projections.Device, error)
	Groups(ctx context.Context) ([]projections.Group, error)
	Stats(ctx context.Context) (projections.Stats, error)
	ListEvents(ctx context.Context, f projections.EventFilter) (projections.Page[projections.ChangeEntry], error)
}

// ScanLog answers GET /api/scans (projections/scanlog). It returns
// projections.ErrBadCursor for a cursor it did not issue, is safe for
// concurrent use and honours ctx.
type ScanLog interface {
	ListScans(ctx context.Context, f projections.ScanFilter) (projections.Page[projections.Scan], error)
}

// DeviceJSONReader is an optional interface of an Inventory: devices
// already encoded, so the API writes them without encoding them for each
// request. Each device must be exactly the bytes json.Marshal gives for
// the device the typed method returns, with every time in UTC and every
// collection [] or {} (what the API writes for the typed value). When
// the Inventory implements it, GET /api/devices and
// GET /api/devices/{id} use it.
type DeviceJSONReader interface {
	// AppendDevicesJSON is ListDevices appending the page's devices,
	// encoded and separated by commas, to dst. It returns the extended
	// buffer and the next cursor (nil on the last page).
	AppendDevicesJSON(ctx context.Context, dst []byte, f projections.DeviceFilter) ([]byte, *string, error)
	// DeviceJSON is Device, encoded. The API does not modify the bytes,
	// and they must not change afterwards.
	DeviceJSON(ctx context.Context, id string) ([]byte, error)
}

// Commander carries out users' edits (events/command.Commander, the one
// write side). Each method appends at most one event with the given actor
// (the token), returns only after it is durable and applied to the
// projections, and returns the new state. Both return
// projections.ErrNotFound for an unknown device, *command.Invalid for a
// field the write side refuses, and projections.ErrWriteFailed when the
// database failed to commit.
type Commander interface {
	EditDevice(ctx context.Context, actor, id string, edit command.DeviceEdit) (projections.Device, error)
	SetWatch(ctx context.Context, actor, id string, watched bool) (projections.WatchState, error)
}

// Authenticator checks an API token secret (the whole "jct_..." string).
// It returns projections.ErrInvalidToken (possibly wrapped) for an
// unknown, expired or revoked token; any other error is a server failure
// (500). It compares secrets in constant time and records last_used_at in
// memory, without appending an event.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (projections.Principal, error)
}

// Readiness says whether the projections have caught up with the log
// head that existed at start-up, and the service is fit to serve (its
// database has not failed, its log verifies).
type Readiness interface {
	Ready() bool
}

// ReadinessDetail is an optional interface of a Readiness: why it is not
// ready, as a sentence that says what happens or what to do. It is the
// detail of /api/readyz's 503; "" keeps the default.
type ReadinessDetail interface {
	NotReadyDetail() string
}

// DiskSpace reports the space of the filesystem that holds the database.
// Implementations answer quickly (a cached statfs); an error means the
// space is unknown, and writes are then allowed.
type DiskSpace interface {
	DiskSpace() (free, total uint64, err error)
}

// Deps are the behaviours the API server uses. Inventory, Commander, Auth
// and Ready are required; Log defaults to a logger that discards
// everything and Now to time.Now.
type Deps struct {
	Inventory Inventory
	// Scans is the scan log; nil: the Inventory's, if it has ListScans.
	Scans     ScanLog
	Commander Commander
	Auth      Authenticator
	Ready     Readiness
	// Space, when set, guards writes: below the reserve (see
	// WriteReserve) they are refused with 507.
	Space DiskSpace
	Log   zerolog.Logger
	Now   func() time.Time

	// Traffic, when set, answers the traffic endpoints (httpapi/traffic.go);
	// without it they are 404 not-recorded.
	Traffic Traffic

	// DNS, when set, answers GET /api/devices/{id}/dns (httpapi/dns.go);
	// without it that is 404 not-recorded. Set it only when a DNS plugin
	// is enabled.
	DNS DNS

	// Notifications, when set, answers /api/notifications
	// (httpapi/notifications.go); without it those paths are 404.
	Notifications Notifications
}

func (d *Deps) check() error {
	switch {
	case d.Inventory == nil:
		return errMissingDep("Inventory")
	case d.Scans == nil:
		s, ok := d.Inventory.(ScanLog)
		if !ok {
			return errMissingDep("Scans")
		}
		d.Scans = s
	}
	switch {
	case d.Commander == nil:
		return errMissingDep("Commander")
	case d.Auth == nil:
		return errMissingDep("Auth")
	case d.Ready == nil:
		return errMissingDep("Ready")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return nil
}
