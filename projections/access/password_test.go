package access

import (
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

// A well-formed salt (16 bytes) and key (32 bytes) to build hostile
// variants around.
const goodSalt, goodKey = "c2FsdHNhbHRzYWx0c2FsdA", "VUib7NyZxW4ukrnF6+wBPpGRqIyg0qN+x+7pel+YkDs"

func TestHashVerifyRoundTrip(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	re := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !re.MatchString(h) {
		t.Fatalf("hash %q does not match %v", h, re)
	}
	h2, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	if h == h2 {
		t.Errorf("two hashes of one password are equal: the salt is not random")
	}
	tests := []struct {
		name, pw string
		want     bool
	}{
		{"right", "correct horse battery", true},
		{"wrong", "correct horse batterx", false},
		{"prefix", "correct horse batter", false},
		{"empty", "", false},
		{"case", "Correct horse battery", false},
		{"over-long", strings.Repeat("x", 1025), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := VerifyPassword(h, tt.pw)
			if err != nil || ok != tt.want {
				t.Errorf("VerifyPassword = %v, %v; want %v", ok, err, tt.want)
			}
		})
	}
}

// TestVerifyPasswordOtherParams checks hashes made with other (bounded)
// parameters, read from the string, against known answers of the argon2
// reference implementation (password "password", salt "somesalt", the
// argon2id vectors of golang.org/x/crypto/argon2's tests).
func TestVerifyPasswordOtherParams(t *testing.T) {
	tests := []struct {
		params string
		keyHex string
	}{
		{"m=64,t=1,p=1", "655ad15eac652dc59f7170a7332bf49b8469be1fdb9c28bb"},
		{"m=64,t=2,p=2", "350ac37222f436ccb5c0972f1ebd3bf6b958bf2071841362"},
		{"m=256,t=3,p=2", "4668d30ac4187e6878eedeacf0fd83c5a0a30db2cc16ef0b"},
		{"m=4096,t=4,p=4", "145db9733a9f4ee43edf33c509be96b934d505a4efb33c5a"},
		{"m=1024,t=4,p=8", "8dafa8e004f8ea96bf7c0f93eecf67a6047476143d15577f"},
		{"m=1024,t=3,p=6", "1640b932f4b60e272f5d2207b9a9c626ffa1bd88d2349016"},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			key, err := hex.DecodeString(tt.keyHex)
			if err != nil {
				t.Fatal(err)
			}
			phc := "$argon2id$v=19$" + tt.params + "$" + b64.EncodeToString([]byte("somesalt")) + "$" + b64.EncodeToString(key)
			if ok, err := VerifyPassword(phc, "password"); err != nil || !ok {
				t.Fatalf("VerifyPassword(%s) = %v, %v; want true", phc, ok, err)
			}
			if ok, err := VerifyPassword(phc, "passwore"); err != nil || ok {
				t.Fatalf("wrong password: %v, %v; want false", ok, err)
			}
		})
	}
}

func TestVerifyPasswordHostile(t *testing.T) {
	good := "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey
	if _, err := parsePHC(good); err != nil {
		t.Fatalf("parsePHC(good): %v", err)
	}
	tests := []struct{ name, phc string }{
		{"empty", ""},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"argon2i", "$argon2i$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"argon2d", "$argon2d$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"old version", "$argon2id$v=16$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"no version", "$argon2id$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"huge memory", "$argon2id$v=19$m=4294967295,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"memory over 64 MiB", "$argon2id$v=19$m=65537,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"memory overflowing uint32", "$argon2id$v=19$m=9999999999,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"memory below 8p", "$argon2id$v=19$m=31,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"huge time", "$argon2id$v=19$m=65536,t=4294967295,p=4$" + goodSalt + "$" + goodKey},
		{"time 17", "$argon2id$v=19$m=65536,t=17,p=4$" + goodSalt + "$" + goodKey},
		{"zero time", "$argon2id$v=19$m=65536,t=0,p=4$" + goodSalt + "$" + goodKey},
		{"zero threads", "$argon2id$v=19$m=65536,t=3,p=0$" + goodSalt + "$" + goodKey},
		{"255 threads", "$argon2id$v=19$m=65536,t=3,p=255$" + goodSalt + "$" + goodKey},
		{"256 threads wraps uint8", "$argon2id$v=19$m=65536,t=3,p=256$" + goodSalt + "$" + goodKey},
		{"negative", "$argon2id$v=19$m=-1,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"plus sign", "$argon2id$v=19$m=+65536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"leading zero", "$argon2id$v=19$m=065536,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"hex number", "$argon2id$v=19$m=0x10000,t=3,p=4$" + goodSalt + "$" + goodKey},
		{"params reordered", "$argon2id$v=19$t=3,m=65536,p=4$" + goodSalt + "$" + goodKey},
		{"missing param", "$argon2id$v=19$m=65536,t=3$" + goodSalt + "$" + goodKey},
		{"extra param", "$argon2id$v=19$m=65536,t=3,p=4,k=1$" + goodSalt + "$" + goodKey},
		{"spaces", "$argon2id$v=19$m=65536, t=3, p=4$" + goodSalt + "$" + goodKey},
		{"short salt", "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$" + goodKey},
		{"empty salt", "$argon2id$v=19$m=65536,t=3,p=4$$" + goodKey},
		{"long salt", "$argon2id$v=19$m=65536,t=3,p=4$" + strings.Repeat("QUFB", 22) + "$" + goodKey},
		{"padded salt", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "==$" + goodKey},
		{"url-safe salt", "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0c2Fsd_-$" + goodKey},
		{"non-canonical base64", "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0c2FsdB$" + goodKey},
		{"short key", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$c2FsdA"},
		{"empty key", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$"},
		{"long key", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + strings.Repeat("QUFB", 22)},
		{"extra field", good + "$x"},
		{"missing leading dollar", good[1:]},
		{"trailing newline", good + "\n"},
		{"newline inside the key", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey[:20] + "\n" + goodKey[20:]},
		{"CR inside the salt", "$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt[:5] + "\r" + goodSalt[5:] + "$" + goodKey},
		{"over-long string", good + strings.Repeat("A", 300)},
		{"only dollars", "$$$$$"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := VerifyPassword(tt.phc, "correct horse")
			if ok || !errors.Is(err, ErrBadHash) {
				t.Fatalf("VerifyPassword = %v, %v; want false, ErrBadHash", ok, err)
			}
			if strings.Contains(err.Error(), goodKey) || strings.Contains(err.Error(), goodSalt) {
				t.Errorf("error quotes the hash: %v", err)
			}
		})
	}
}

func TestValidatePassword(t *testing.T) {
	tests := []struct {
		name, pw string
		ok       bool
	}{
		{"8 ASCII", "abcdefgh", true},
		{"7 ASCII", "abcdefg", false},
		{"empty", "", false},
		{"8 characters, 16 bytes", "éééééééé", true},
		{"7 characters, 14 bytes", "ééééééé", false},
		{"1024 bytes", strings.Repeat("x", 1024), true},
		{"1025 bytes", strings.Repeat("x", 1025), false},
		{"invalid UTF-8", "abcdefgh\xff", false},
		{"spaces count", "        ", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidatePassword(tt.pw); (err == nil) != tt.ok {
				t.Errorf("ValidatePassword = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if _, err := HashPassword("short"); !errors.Is(err, ErrBadPassword) {
		t.Errorf("HashPassword(short) = %v, want ErrBadPassword", err)
	}
}

func TestValidateUserName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"admin", true},
		{"a", true},
		{"first.last_2-x", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"with space", false},
		{"ümlaut", false},
		{"a/b", false},
		{"a@b", false},
		{"tab\t", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateUserName(tt.name); (err == nil) != tt.ok {
				t.Errorf("ValidateUserName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
}

func TestCheckPassword(t *testing.T) {
	db, _ := openDB(t)
	p := New(newClock(t0).Now)
	var l logger
	h1, err := HashPassword("first password")
	if err != nil {
		t.Fatal(err)
	}
	apply(t, db, p,
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "alice", PasswordHash: h1}, t0),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "broken", PasswordHash: "not a hash"}, t0),
	)
	if !p.CheckPassword("alice", "first password") {
		t.Fatal("right password refused")
	}
	for _, tc := range []struct{ name, user, pw string }{
		{"wrong password", "alice", "second password"},
		{"unknown user", "bob", "first password"},
		{"name case", "Alice", "first password"},
		{"malformed stored hash", "broken", "not a hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p.CheckPassword(tc.user, tc.pw) {
				t.Errorf("CheckPassword(%q) accepted", tc.user)
			}
		})
	}
	h2, err := HashPassword("second password")
	if err != nil {
		t.Fatal(err)
	}
	changed := t0.Add(time.Hour)
	apply(t, db, p, l.ev(t, events.KindUserPasswordChanged, events.UserPasswordChanged{Name: "alice", PasswordHash: h2}, changed))
	if p.CheckPassword("alice", "first password") || !p.CheckPassword("alice", "second password") {
		t.Fatal("password change not applied")
	}
	u, err := p.User("alice")
	if err != nil || u.PasswordChangedAt == nil || !u.PasswordChangedAt.Equal(changed) || !u.CreatedAt.Equal(t0) {
		t.Fatalf("User(alice) = %+v, %v", u, err)
	}
	apply(t, db, p, l.ev(t, events.KindUserRemoved, events.UserRemoved{Name: "alice"}, changed))
	if p.CheckPassword("alice", "second password") {
		t.Fatal("removed user signed in")
	}
}

func TestDummyHashParses(t *testing.T) {
	h, err := parsePHC(dummyHash)
	if err != nil {
		t.Fatalf("dummyHash: %v", err)
	}
	if h.memory != argonMemory || h.time != argonTime || h.threads != argonThreads || len(h.key) != argonKeyLen {
		t.Errorf("dummyHash parameters %+v differ from the defaults: its timing would differ", h)
	}
}

func FuzzParsePHC(f *testing.F) {
	f.Add("$argon2id$v=19$m=65536,t=3,p=4$" + goodSalt + "$" + goodKey)
	f.Add(dummyHash)
	f.Add("$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$PXDaIbUr3rL4qWAhPGUUJQ")
	f.Add("$argon2id$v=19$m=4294967295,t=3,p=4$" + goodSalt + "$" + goodKey)
	f.Add("$argon2id$v=19$m=65536,t=3,p=256$$")
	f.Add("$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parsePHC(s)
		if err != nil {
			if !errors.Is(err, ErrBadHash) {
				t.Fatalf("error %v does not wrap ErrBadHash", err)
			}
			return
		}
		if h.threads < 1 || h.threads > maxArgonThreads || h.time < 1 || h.time > maxArgonTime ||
			h.memory < 8*uint32(h.threads) || h.memory > maxArgonMemory ||
			len(h.salt) < minSaltLen || len(h.salt) > maxSaltLen || len(h.key) < minKeyLen || len(h.key) > maxKeyLen {
			t.Fatalf("parsePHC accepted out-of-bounds parameters %+v from %q", h, s)
		}
		// An accepted string is canonical: formatting it again gives it back.
		again := "$argon2id$v=19$m=" + itoa(h.memory) + ",t=" + itoa(h.time) + ",p=" + itoa(uint32(h.threads)) +
			"$" + b64.EncodeToString(h.salt) + "$" + b64.EncodeToString(h.key)
		if again != s {
			t.Fatalf("accepted non-canonical %q (canonical %q)", s, again)
		}
	})
}

func itoa(n uint32) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func BenchmarkCheckPassword(b *testing.B) {
	db, _ := openDB(b)
	p := New(nil)
	h, err := HashPassword("benchmark password")
	if err != nil {
		b.Fatal(err)
	}
	var l logger
	apply(b, db, p, l.ev(b, events.KindUserAdded, events.UserAdded{Name: "u", PasswordHash: h}, t0))
	b.Run("known", func(b *testing.B) {
		for b.Loop() {
			p.CheckPassword("u", "benchmark password")
		}
	})
	b.Run("unknown", func(b *testing.B) {
		for b.Loop() {
			p.CheckPassword("nobody", "benchmark password")
		}
	})
}
