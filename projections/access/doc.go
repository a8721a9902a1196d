// Package access is the read model of API tokens and web sign-in accounts,
// and the checks that authenticate them.
//
// # Projection
//
// [Projection] (name "access", version 1) folds token.created,
// token.revoked, user.added, user.password_changed and user.removed into
// the buckets "access_tokens" and "access_users" and into in-memory maps
// guarded by a RWMutex. Apply reads and writes only the buckets inside the
// caller's transaction and changes memory through tx.OnCommit, so a rolled
// back transaction leaves memory untouched and several events applied in
// one transaction see each other. Load rebuilds memory from the buckets;
// a runner that empties the buckets to rebuild must call Load afterwards.
// Events that refer to an unknown token or account (a revoke of an unknown
// id, a second token.created with the same id, a second user.added of a
// present name) change nothing: the command layer refuses them before they
// are appended, and the projection stays deterministic if one slips in.
//
// # Tokens
//
// A token secret is "jct_" followed by 43 base62 characters (0-9a-zA-Z),
// the left-padded base62 form of 32 bytes from crypto/rand (256 bits): 47
// characters in all. Only its SHA-256 is stored. A token id is "tok_"
// followed by 10 base62 characters. Expiry choices ([ParseExpiry]) are
// "never", "30d" (720h), "90d" (2160h) and "1y" (8760h, 365 days), counted
// from creation. A token is expired from the instant of its expires_at.
// Expired tokens stay listed with state "expired" until revoked; a revoked
// token leaves the list (the log keeps it).
//
// Token names are 1 to 64 characters without control characters
// ([ValidateTokenName]) and unique among listed tokens (active or
// expired, compared exactly): [Projection.TokenNameTaken] says whether a
// name is in use. To reuse the name of an expired token, revoke it first.
//
// [Projection.Authenticate] hashes the presented secret, finds the token
// by hash, compares the hashes with subtle.ConstantTimeCompare, and
// refuses revoked, expired and malformed tokens all with
// projections.ErrInvalidToken. It records last_used_at in memory only (no
// event per request); [Projection.FlushLastUsed] writes the changed values
// to the bucket "token_last_used", which is not one of the projection's
// Buckets, so replays and snapshots ignore it: a database rebuilt by
// replay starts with every last_used_at empty. [Projection.RunFlusher]
// flushes periodically and once more when its context ends. The same
// flush writes each web session's last request
// ([Projection.TouchSession], bucket "session_last_active"), so that
// server.auth.idle_timeout still ends a session after a restart.
//
// # Accounts
//
// User names are 1 to 64 characters from ASCII letters, digits, '.', '_', '-'
// ([ValidateUserName]). Passwords are 8 to 1024 bytes of valid UTF-8, at
// least 8 characters ([ValidatePassword]). Hashes are argon2id PHC strings
// "$argon2id$v=19$m=19456,t=2,p=1$salt$hash" (16-byte salt, 32-byte key,
// unpadded standard base64). These are the OWASP Password Storage Cheat
// Sheet's first argon2id parameters; RFC 9106's m=65536,t=3,p=4 costs
// 64 MiB per verification, most of the service's 80 MB budget (see
// password.go for the measurements). [VerifyPassword] reads the parameters
// from the string, so hashes made with other parameters keep working, and
// refuses values outside t 1..16, p 1..16, m 8·p..65536 KiB (64 MiB), salt
// 8..64 bytes, key 16..64 bytes, so a hostile string cannot make it
// allocate or spin without bound.
//
// Each verification allocates m KiB (19 MiB by default).
// [Projection.CheckPassword] therefore runs one verification at a time per
// projection, which keeps a burst of sign-in attempts inside the service's
// memory budget; and for an unknown name it does the same work against a
// fixed dummy hash, so its timing does not reveal which accounts exist.
package access
