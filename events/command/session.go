package command

import (
	"context"
	"fmt"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/access"
)

// Sessions is the part of the access read model the session commands
// read. Commander.Accounts must implement it for them
// (access.Projection does).
type Sessions interface {
	User(name string) (access.User, error)
	SessionByID(id string) (access.Session, bool)
}

func (c *Commander) sessions() (Sessions, error) {
	s, ok := c.Accounts.(Sessions)
	if !ok {
		return nil, fmt.Errorf("command: the accounts read model keeps no sessions")
	}
	return s, nil
}

// StartSession signs user in for lifetime: it appends session.started
// (source "ui", actor the user) carrying only the SHA-256 of a new
// secret, and returns the session and the secret, which only the cookie
// keeps. The caller has checked the password; an unknown user is a
// *Refused.
func (c *Commander) StartSession(ctx context.Context, user string, lifetime time.Duration) (access.Session, string, error) {
	if lifetime <= 0 {
		return access.Session{}, "", &Invalid{[]FieldError{{"lifetime", fmt.Sprintf("%v: must be positive", lifetime)}}}
	}
	s, err := c.sessions()
	if err != nil {
		return access.Session{}, "", err
	}
	secret, sum := access.NewSessionSecret()
	id := access.SessionID()
	err = c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, err := s.User(user); err != nil {
			return nil, refused("no user %q (see jocasta user list)", user)
		}
		exp := c.Now().UTC().Add(lifetime)
		return c.event(events.KindSessionStarted, events.SessionStarted{SessionID: id, User: user, ExpiresAt: exp, SecretSHA256: sum},
			"ui", user, "session/"+id, "")
	})
	if err != nil {
		return access.Session{}, "", err
	}
	got, ok := s.SessionByID(id)
	if !ok {
		return access.Session{}, "", fmt.Errorf("command: session %s missing after start", id)
	}
	return got, secret, nil
}

// EndSession ends a session (reason events.SessionEndSignOut or
// events.SessionEndIdle). Ending a session that already ended appends
// nothing.
func (c *Commander) EndSession(ctx context.Context, actor, id, reason string) error {
	if reason != events.SessionEndSignOut && reason != events.SessionEndIdle {
		return &Invalid{[]FieldError{{"reason", fmt.Sprintf("%q: want sign_out or idle", reason)}}}
	}
	s, err := c.sessions()
	if err != nil {
		return err
	}
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if _, ok := s.SessionByID(id); !ok {
			return nil, nil
		}
		return c.event(events.KindSessionEnded, events.SessionEnded{SessionID: id, Reason: reason}, "ui", actor, "session/"+id, "")
	})
}
