package events

import "time"

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
