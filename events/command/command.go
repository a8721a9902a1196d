package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/store"
)

// Limits of the editable device fields (DECISIONS.md).
const (
	MaxLabel = 128
	MaxGroup = 64
	MaxType  = 64
	MaxNotes = 4096
)

// Log is the part of the store commands use.
type Log interface {
	Head() uint64
	AppendFunc(ctx context.Context, decide func(tx *bolt.Tx) ([]events.Envelope, error)) ([]events.Envelope, error)
}

// Devices is the inventory as commands read it.
type Devices interface {
	Device(ctx context.Context, id string) (projections.Device, error)
	WatchState(id string) (projections.WatchState, error)
}

// Accounts is the access read model as commands read it.
type Accounts interface {
	TokenNameTaken(name string) bool
	Token(id string) (projections.Token, error)
	User(name string) (access.User, error)
}

// Commander carries out the commands. Sync must return once the read
// models have applied the given seq.
type Commander struct {
	Log      Log
	Sync     func(ctx context.Context, seq uint64) error
	Devices  Devices
	Accounts Accounts
	Now      func() time.Time
	// DeviceSource is the source recorded on device edits and watch
	// changes: where they were made ("ui", "mcp"). Default "api".
	DeviceSource string
}

// deviceSource is DeviceSource, "api" when unset.
func (c *Commander) deviceSource() string {
	if c.DeviceSource != "" {
		return c.DeviceSource
	}
	return "api"
}

// FieldError names one bad field of a command and what to change.
type FieldError struct {
	Field  string
	Detail string
}

// Invalid is a command refused for its input, field by field.
type Invalid struct{ Fields []FieldError }

func (e *Invalid) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Detail
	}
	return "invalid: " + strings.Join(parts, "; ")
}

// Refused is a command refused for the state it meets (a name taken, a
// token that does not exist). Its message says what to do.
type Refused struct{ Msg string }

func (e *Refused) Error() string { return e.Msg }

func refused(format string, args ...any) error { return &Refused{fmt.Sprintf(format, args...)} }

// errStale says the log moved past the head a decision was read at.
var errStale = errors.New("command: the log moved while deciding")

// decideTries bounds how often a command re-reads after the log moved
// under it; each try waits for the read models, so a busy log settles
// within a few.
const decideTries = 20

// appendDecided appends the event decide returns (nil: nothing),
// deciding inside the append (see the package doc), and returns once the
// read models have applied it.
func (c *Commander) appendDecided(ctx context.Context, decide func() (*events.Envelope, error)) error {
	for range decideTries {
		head := c.Log.Head()
		if err := c.Sync(ctx, head); err != nil {
			return fmt.Errorf("command: wait for the read models: %w", err)
		}
		out, err := c.Log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
			if store.HeadTx(tx) != head {
				return nil, errStale
			}
			e, err := decide()
			if err != nil || e == nil {
				return nil, err
			}
			return []events.Envelope{*e}, nil
		})
		switch {
		case errors.Is(err, errStale):
			continue
		case errors.Is(err, store.ErrOutcomeUnknown), errors.Is(err, store.ErrFailed):
			return fmt.Errorf("%w: %w", projections.ErrWriteFailed, err)
		case err != nil:
			return err
		case len(out) == 0:
			return nil
		}
		if err := c.Sync(ctx, out[len(out)-1].Seq); err != nil {
			return fmt.Errorf("command: wait for the read models: %w", err)
		}
		return nil
	}
	return fmt.Errorf("command: the log kept moving while deciding (%d tries): retry", decideTries)
}

// event builds an envelope with its attribution.
func (c *Commander) event(kind string, payload any, source, actor, stream, device string) (*events.Envelope, error) {
	e, err := events.New(kind, payload, c.Now())
	if err != nil {
		return nil, err
	}
	e.Source, e.Actor, e.Stream, e.Device = source, actor, stream, device
	return &e, nil
}

// DeviceEdit is a person's change of a device's editable fields: a field
// given sets it, a field named in Clear empties it.
type DeviceEdit struct {
	Label, Group, Type, Notes *string
	Ignored                   *bool
	Clear                     []string // "label", "group", "type", "notes"
}

// editable are the text fields, with their limits.
var editable = []struct {
	name      string
	max       int
	multiline bool
	get       func(*DeviceEdit) *string
}{
	{"label", MaxLabel, false, func(e *DeviceEdit) *string { return e.Label }},
	{"group", MaxGroup, false, func(e *DeviceEdit) *string { return e.Group }},
	{"type", MaxType, false, func(e *DeviceEdit) *string { return e.Type }},
	{"notes", MaxNotes, true, func(e *DeviceEdit) *string { return e.Notes }},
}

// CheckField says what is wrong with value for the editable text field
// (label, group, type or notes), or "" when nothing is.
func CheckField(field, value string) string {
	for _, f := range editable {
		if f.name == field {
			return checkText(value, f.max, f.multiline)
		}
	}
	return "not an editable field: a device takes label, group, type, notes and ignored"
}

// Validate lists what is wrong with the edit, field by field.
func (e DeviceEdit) Validate() []FieldError {
	var errs []FieldError
	for _, f := range editable {
		v := f.get(&e)
		if v == nil {
			continue
		}
		if d := checkText(*v, f.max, f.multiline); d != "" {
			errs = append(errs, FieldError{f.name, d})
		}
	}
	for _, name := range e.Clear {
		switch name {
		case "label", "group", "type", "notes":
		default:
			errs = append(errs, FieldError{name, "cannot be cleared: only label, group, type and notes can"})
		}
	}
	return errs
}

// checkText returns what is wrong with a text value, or "".
func checkText(v string, max int, multiline bool) string {
	if v == "" {
		return "empty: send null to clear the field"
	}
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Sprintf("%d characters long: use at most %d", n, max)
	}
	return events.CheckText(v, multiline)
}

// payload is the device.edited payload of the edit.
func (e DeviceEdit) payload() events.DeviceEdited {
	return events.DeviceEdited{Label: e.Label, Group: e.Group, Type: e.Type, Notes: e.Notes, Ignored: e.Ignored, Cleared: e.Clear}
}

// changes reports whether applying the edit to d changes any field.
func (e DeviceEdit) changes(d projections.Device) bool {
	differs := func(cur, to *string) bool { return to != nil && (cur == nil || *cur != *to) }
	if differs(d.Label, e.Label) || differs(d.Group, e.Group) || differs(d.Type, e.Type) || differs(d.Notes, e.Notes) {
		return true
	}
	if e.Ignored != nil && *e.Ignored != d.Ignored {
		return true
	}
	for _, f := range e.Clear {
		var cur *string
		switch f {
		case "label":
			cur = d.Label
		case "group":
			cur = d.Group
		case "type":
			cur = d.Type
		case "notes":
			cur = d.Notes
		}
		if cur != nil {
			return true
		}
	}
	return false
}

// EditDevice applies a person's edit and returns the device after it. An
// edit that changes nothing appends nothing.
func (c *Commander) EditDevice(ctx context.Context, actor, id string, edit DeviceEdit) (projections.Device, error) {
	if errs := edit.Validate(); len(errs) > 0 {
		return projections.Device{}, &Invalid{errs}
	}
	err := c.appendDecided(ctx, func() (*events.Envelope, error) {
		d, err := c.Devices.Device(ctx, id)
		if err != nil {
			return nil, err
		}
		if !edit.changes(d) {
			return nil, nil
		}
		return c.event(events.KindDeviceEdited, edit.payload(), c.deviceSource(), actor, "device/"+id, id)
	})
	if err != nil {
		return projections.Device{}, err
	}
	return c.Devices.Device(ctx, id)
}

// SetWatch starts or stops watching a device. Setting the watch it
// already has appends nothing.
func (c *Commander) SetWatch(ctx context.Context, actor, id string, watched bool) (projections.WatchState, error) {
	err := c.appendDecided(ctx, func() (*events.Envelope, error) {
		d, err := c.Devices.Device(ctx, id)
		if err != nil {
			return nil, err
		}
		if d.Watched == watched {
			return nil, nil
		}
		return c.event(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: watched}, c.deviceSource(), actor, "device/"+id, id)
	})
	if err != nil {
		return projections.WatchState{}, err
	}
	return c.Devices.WatchState(id)
}

// TokenRequest asks for a new API token.
type TokenRequest struct {
	Name    string
	Mode    string // events.ModeRead or events.ModeReadWrite
	Expires string // never, 30d, 90d or 1y
}

// CreateToken creates a token and returns it with its secret, shown once.
// The name is checked free inside the append.
func (c *Commander) CreateToken(ctx context.Context, source, actor string, req TokenRequest) (projections.Token, string, error) {
	name := strings.TrimSpace(req.Name)
	var errs []FieldError
	if err := access.ValidateTokenName(name); err != nil {
		errs = append(errs, FieldError{"name", err.Error()})
	}
	if req.Mode != events.ModeRead && req.Mode != events.ModeReadWrite {
		errs = append(errs, FieldError{"mode", fmt.Sprintf("%q: want read or read_write", req.Mode)})
	}
	now := c.Now().UTC()
	exp, err := access.ParseExpiry(req.Expires, now)
	if err != nil {
		errs = append(errs, FieldError{"expires", fmt.Sprintf("%q: want never, 30d, 90d or 1y", req.Expires)})
	}
	if len(errs) > 0 {
		return projections.Token{}, "", &Invalid{errs}
	}
	secret, sum := access.NewTokenSecret()
	id := access.TokenID()
	err = c.appendDecided(ctx, func() (*events.Envelope, error) {
		if c.Accounts.TokenNameTaken(name) {
			return nil, refused("a token named %q already exists; revoke it or choose another name", name)
		}
		return c.event(events.KindTokenCreated, events.TokenCreated{TokenID: id, Name: name, Mode: req.Mode, ExpiresAt: exp, SecretSHA256: sum},
			source, actor, "token/"+id, "")
	})
	if err != nil {
		return projections.Token{}, "", err
	}
	tok, err := c.Accounts.Token(id)
	if err != nil {
		return projections.Token{}, "", fmt.Errorf("command: token %s missing after create: %w", id, err)
	}
	return tok, secret, nil
}

// RevokeToken revokes a token.
func (c *Commander) RevokeToken(ctx context.Context, source, actor, id string) error {
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Accounts.Token(id); err != nil {
			return nil, refused("no token has id %q: it may have been revoked already (the token list shows the others)", id)
		}
		return c.event(events.KindTokenRevoked, events.TokenRevoked{TokenID: id}, source, actor, "token/"+id, "")
	})
}

// AddUser adds a web sign-in account.
func (c *Commander) AddUser(ctx context.Context, source, actor, name, password string) error {
	if err := access.ValidateUserName(name); err != nil {
		return &Invalid{[]FieldError{{"name", access.UserNameRule}}}
	}
	if err := access.ValidatePassword(password); err != nil {
		return &Invalid{[]FieldError{{"password", access.PasswordRule}}}
	}
	hash, err := access.HashPassword(password) // slow: outside the append
	if err != nil {
		return err
	}
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Accounts.User(name); err == nil {
			return nil, refused("user %q already exists; use jocasta user passwd to change the password", name)
		}
		return c.event(events.KindUserAdded, events.UserAdded{Name: name, PasswordHash: hash}, source, actor, "user/"+name, "")
	})
}

// ChangePassword changes an account's password.
func (c *Commander) ChangePassword(ctx context.Context, source, actor, name, password string) error {
	if err := access.ValidatePassword(password); err != nil {
		return &Invalid{[]FieldError{{"password", access.PasswordRule}}}
	}
	hash, err := access.HashPassword(password)
	if err != nil {
		return err
	}
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Accounts.User(name); err != nil {
			return nil, refused("no user %q (see jocasta user list)", name)
		}
		return c.event(events.KindUserPasswordChanged, events.UserPasswordChanged{Name: name, PasswordHash: hash}, source, actor, "user/"+name, "")
	})
}

// RemoveUser removes an account.
func (c *Commander) RemoveUser(ctx context.Context, source, actor, name string) error {
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := c.Accounts.User(name); err != nil {
			return nil, refused("no user %q (see jocasta user list)", name)
		}
		return c.event(events.KindUserRemoved, events.UserRemoved{Name: name}, source, actor, "user/"+name, "")
	})
}
