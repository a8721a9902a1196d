package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events"
)

// Token secret and id formats.
const (
	// SecretPrefix starts every token secret.
	SecretPrefix = "jct_"
	// secretBytes random bytes make the secret: 256 bits.
	secretBytes = 32
	// secretDigits is the fixed base62 length of 32 bytes:
	// ceil(256 / log2(62)) = 43.
	secretDigits = 43
	// SecretLen is the length of a whole secret.
	SecretLen = len(SecretPrefix) + secretDigits
	// IDPrefix starts every token id.
	IDPrefix = "tok_"
	idDigits = 10
)

const base62Digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// NewTokenSecret returns a new token secret ("jct_" and 43 base62
// characters from 32 crypto/rand bytes) and the hex SHA-256 of the whole
// secret, which is all that may be stored.
func NewTokenSecret() (secret, sha256hex string) {
	var b [secretBytes]byte
	// crypto/rand.Read never returns an error (Go ≥ 1.24): it fills b or
	// crashes the program irrecoverably.
	_, _ = rand.Read(b[:])
	secret = encodeSecret(b)
	return secret, SecretSHA256(secret)
}

// encodeSecret is "jct_" and the base62 form of b, left-padded with '0'
// to 43 digits. big.Int.Text(62) uses the digits 0-9a-zA-Z.
func encodeSecret(b [secretBytes]byte) string {
	digits := new(big.Int).SetBytes(b[:]).Text(62)
	return SecretPrefix + strings.Repeat("0", secretDigits-len(digits)) + digits
}

// SecretSHA256 returns the hex SHA-256 of a token secret, as
// events.TokenCreated records it.
func SecretSHA256(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// wellFormedSecret reports whether s has the shape of a token secret.
func wellFormedSecret(s string) bool {
	if len(s) != SecretLen || !strings.HasPrefix(s, SecretPrefix) {
		return false
	}
	for i := len(SecretPrefix); i < len(s); i++ {
		if !isBase62(s[i]) {
			return false
		}
	}
	return true
}

func isBase62(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// TokenID returns a new opaque token id: "tok_" and 10 base62 characters
// (about 59 bits from crypto/rand, drawn without modulo bias).
func TokenID() string {
	out := make([]byte, 0, len(IDPrefix)+idDigits)
	out = append(out, IDPrefix...)
	var buf [32]byte
	for len(out) < cap(out) {
		_, _ = rand.Read(buf[:]) // never fails, see NewTokenSecret
		for _, c := range buf {
			// 248 = 4·62: bytes above it would bias the low digits.
			if c < 248 && len(out) < cap(out) {
				out = append(out, base62Digits[c%62])
			}
		}
	}
	return string(out)
}

// Expiry choices and their lengths: days are 24h, a year is 365 days.
var expiries = map[string]time.Duration{
	"30d": 720 * time.Hour,
	"90d": 2160 * time.Hour,
	"1y":  8760 * time.Hour,
}

// ParseExpiry turns an expiry choice into the expiry time counted from
// now: "never" gives nil, "30d" now+720h, "90d" now+2160h, "1y" now+8760h.
// The result is UTC. Anything else is ErrBadExpiry.
func ParseExpiry(choice string, now time.Time) (*time.Time, error) {
	if choice == "never" {
		return nil, nil
	}
	d, ok := expiries[choice]
	if !ok {
		return nil, fmt.Errorf("access: expiry %q: %w", choice, ErrBadExpiry)
	}
	t := now.UTC().Add(d)
	return &t, nil
}

// ValidateMode checks a token mode: events.ModeRead or
// events.ModeReadWrite.
func ValidateMode(mode string) error {
	if mode != events.ModeRead && mode != events.ModeReadWrite {
		return fmt.Errorf("access: mode %q: %w", mode, ErrBadMode)
	}
	return nil
}

// ValidateTokenName checks a token name: 1 to 64 characters of valid
// UTF-8, not only spaces, and nothing events.CheckText refuses (control
// and bidirectional characters, U+FFFD).
func ValidateTokenName(name string) error {
	if !utf8.ValidString(name) || strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > 64 {
		return ErrBadTokenName
	}
	if p := events.CheckText(name, false); p != "" {
		return fmt.Errorf("%w: it %s", ErrBadTokenName, p)
	}
	return nil
}

// ValidateUserName checks an account name: 1 to 64 ASCII letters, digits,
// '.', '_' or '-'.
func ValidateUserName(name string) error {
	if len(name) < 1 || len(name) > 64 {
		return ErrBadUserName
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isBase62(c) && c != '.' && c != '_' && c != '-' {
			return ErrBadUserName
		}
	}
	return nil
}
