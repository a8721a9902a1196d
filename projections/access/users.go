package access

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// User is a web sign-in account as listed (never its hash).
type User struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// PasswordChangedAt is when the password was last changed, nil if
	// never: sessions issued before it should no longer be honoured.
	PasswordChangedAt *time.Time `json:"password_changed_at"`
}

// dummyHash is verified in place of the hash of an unknown account, so
// CheckPassword costs the same whether or not the name exists. It is the
// hash of a random password nobody knows, with the default parameters.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$+ZYy3d1hOeJpKzRvlwzYkQ$0z3H08bY9bHmcQVUrYeC2kJlNjVP1v7UxlEiVliN/UQ"

func userView(r *userRec) User {
	return User{Name: r.Name, CreatedAt: r.CreatedAt, PasswordChangedAt: utcPtr(r.PasswordChangedAt)}
}

// Users lists the accounts sorted by name.
func (p *Projection) Users() []User {
	p.mu.RLock()
	out := make([]User, 0, len(p.users))
	for _, u := range p.users {
		out = append(out, userView(u))
	}
	p.mu.RUnlock()
	slices.SortFunc(out, func(a, b User) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// User returns one account or an error wrapping projections.ErrNotFound.
func (p *Projection) User(name string) (User, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	u, ok := p.users[name]
	if !ok {
		return User{}, fmt.Errorf("access: user %q: %w", name, projections.ErrNotFound)
	}
	return userView(u), nil
}

// HasUsers reports whether any account exists (serve prints a one-time
// setup link when none does).
func (p *Projection) HasUsers() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.users) > 0
}

// CheckPassword reports whether password is the password of the account
// name. It verifies against a dummy hash when the account does not exist
// (the same argon2id work, so timing does not tell whether a name exists),
// compares in constant time, and runs one verification at a time per
// projection. A stored hash that does not parse never matches.
func (p *Projection) CheckPassword(name, password string) bool {
	p.mu.RLock()
	u, exists := p.users[name]
	hash := dummyHash
	if exists {
		hash = u.PasswordHash
	}
	p.mu.RUnlock()
	p.hashing <- struct{}{}
	defer func() { <-p.hashing }()
	ok, err := VerifyPassword(hash, password)
	return exists && ok && err == nil
}
