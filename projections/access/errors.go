package access

import "errors"

// The rules of ErrBadUserName and ErrBadPassword without their subject,
// for messages that name the field themselves.
const (
	UserNameRule = "must be 1 to 64 letters, digits, '.', '_' or '-'"
	PasswordRule = "must be 8 to 1024 bytes of UTF-8 with at least 8 characters"
)

var (
	// ErrBadExpiry is returned by ParseExpiry for anything but never, 30d,
	// 90d or 1y.
	ErrBadExpiry = errors.New("expiry must be one of never, 30d, 90d, 1y")
	// ErrBadMode is returned for a token mode other than read or
	// read_write.
	ErrBadMode = errors.New("mode must be read or read_write")
	// ErrBadTokenName is returned for an empty, over-long or
	// control-character token name.
	ErrBadTokenName = errors.New("token name must be 1 to 64 characters, not only spaces, without control characters")
	// ErrBadUserName is returned for a user name that is not 1 to 64
	// letters, digits, '.', '_' or '-'.
	ErrBadUserName = errors.New("user name " + UserNameRule)
	// ErrBadPassword is returned for a password shorter than 8 characters,
	// longer than 1024 bytes, or not valid UTF-8.
	ErrBadPassword = errors.New("password " + PasswordRule)
	// ErrBadHash is returned by VerifyPassword for a string that is not an
	// argon2id PHC hash within the accepted parameter bounds.
	ErrBadHash = errors.New("not an acceptable argon2id PHC hash")
)
