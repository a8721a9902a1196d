package events

import "time"

// Kinds of web sign-in session events.
const (
	KindSessionStarted = "session.started"
	KindSessionEnded   = "session.ended"
)

// Reasons a session ended (SessionEnded.Reason).
const (
	SessionEndSignOut = "sign_out" // the user signed out
	SessionEndIdle    = "idle"     // unused for longer than server.auth.idle_timeout
)

// SessionStarted is the payload of session.started: a user signed in to
// the web interface. Only the SHA-256 of the cookie secret is recorded.
type SessionStarted struct {
	SessionID string    `json:"session_id"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
	// SecretSHA256 is the hex SHA-256 of the cookie's secret.
	SecretSHA256 string `json:"secret_sha256"`
}

// SessionEnded is the payload of session.ended: a session was signed out
// or found idle. (Removing a user or changing their password ends their
// sessions without a session.ended: the access projection drops them.)
type SessionEnded struct {
	SessionID string `json:"session_id"`
	Reason    string `json:"reason"`
}
