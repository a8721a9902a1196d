package events

import (
	"encoding/json"
	"time"
)

// Kinds of token and account events.
const (
	KindTokenCreated        = "token.created"
	KindTokenRevoked        = "token.revoked"
	KindUserAdded           = "user.added"
	KindUserPasswordChanged = "user.password_changed"
	KindUserRemoved         = "user.removed"
)

// Token access modes.
const (
	ModeRead      = "read"
	ModeReadWrite = "read_write"
)

// TokenCreated is the payload of token.created. Only the SHA-256 of the
// secret is recorded.
type TokenCreated struct {
	TokenID   string     `json:"token_id"`
	Name      string     `json:"name"`
	Mode      string     `json:"mode"`
	ExpiresAt *time.Time `json:"expires_at"`
	// SecretSHA256 is the hex SHA-256 of the whole token string.
	SecretSHA256 string `json:"secret_sha256"`
}

// TokenRevoked is the payload of token.revoked.
type TokenRevoked struct {
	TokenID string `json:"token_id"`
}

// UserAdded is the payload of user.added; PasswordHash is an argon2id PHC
// string, never the password.
type UserAdded struct {
	Name         string `json:"name"`
	PasswordHash string `json:"password_hash"`
}

// UserPasswordChanged is the payload of user.password_changed.
type UserPasswordChanged struct {
	Name         string `json:"name"`
	PasswordHash string `json:"password_hash"`
}

// UserRemoved is the payload of user.removed.
type UserRemoved struct {
	Name string `json:"name"`
}

// secretFields are, per kind, the payload members that hold a credential
// (a token's hash, an account's password hash). Hashes are not the
// secrets, but a hash is what an offline guesser needs.
var secretFields = map[string][]string{
	KindTokenCreated:        {"secret_sha256"},
	KindUserAdded:           {"password_hash"},
	KindUserPasswordChanged: {"password_hash"},
	KindSessionStarted:      {"secret_sha256"},
}

// RedactedSecret replaces a credential in a redacted event.
const RedactedSecret = "[redacted]"

// RedactSecrets returns e with every credential of its payload replaced
// by RedactedSecret, for showing the log (log export, log tail). The hash
// chain of a redacted event no longer verifies: a backup keeps them.
func RedactSecrets(e Envelope) Envelope {
	fields := secretFields[e.Kind]
	if len(fields) == 0 {
		return e
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		e.Payload = json.RawMessage(`"` + RedactedSecret + `"`) // not an object: show none of it
		return e
	}
	for _, f := range fields {
		if _, ok := m[f]; ok {
			m[f] = json.RawMessage(`"` + RedactedSecret + `"`)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.Payload = json.RawMessage(`"` + RedactedSecret + `"`)
		return e
	}
	e.Payload = b
	return e
}
