package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// access is what a route needs from a token.
type access int

const (
	accessPublic access = iota // no token (livez, readyz, openapi.json)
	accessRead                 // a read or read_write token
	accessWrite                // a read_write token
)

// bearerToken returns the token of an Authorization header. present is
// false when there is no header; ok is false when the header is not
// exactly one "Bearer <token68>" (scheme case-insensitive, one space).
// The check looks only at syntax, never at the token's length or value,
// so it reveals nothing about valid tokens; the Authenticator compares
// in constant time.
func bearerToken(h http.Header) (token string, present, ok bool) {
	vals := h.Values("Authorization")
	if len(vals) == 0 {
		return "", false, false
	}
	if len(vals) > 1 {
		return "", true, false
	}
	scheme, tok, found := strings.Cut(vals[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || !isToken68(tok) {
		return "", true, false
	}
	return tok, true, true
}

// isToken68 checks the token68 syntax of RFC 9110 section 11.2.
func isToken68(s string) bool {
	end := len(s)
	for end > 0 && s[end-1] == '=' {
		end--
	}
	if end == 0 {
		return false
	}
	for i := 0; i < end; i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// authenticate guards a route. In order: no Authorization header → 401
// (token-missing); a malformed header or a token the Authenticator
// refuses → 401 (token-invalid), or 429 once this client has sent too
// many refused tokens; the token's own rate limit → 429; a read token on
// a write route → 403. The token is checked before the failed-token
// limit, and only refusals count: clients behind one NAT or proxy share
// an address, and one of them sending bad tokens must not lock out the
// others' valid ones.
func (s *server) authenticate(level access, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateFrom(r.Context())
		tok, present, ok := bearerToken(r.Header)
		if !present {
			writeProblem(w, r, errTokenMissing())
			return
		}
		var p projections.Principal
		err := projections.ErrInvalidToken
		if ok {
			p, err = s.auth.Authenticate(r.Context(), tok)
		}
		if errors.Is(err, projections.ErrInvalidToken) {
			s.refuseToken(w, r, clientKey(st.client))
			return
		}
		if err != nil {
			s.ew.writeError(w, r, fmt.Errorf("httpapi: authenticating token: %w", err))
			return
		}
		st.principal, st.authed = p, true
		if allowed, wait := s.tokenLim.take(p.TokenID, s.now()); !allowed {
			writeProblem(w, r, errRateLimited(retryAfter(wait), fmt.Sprintf(
				"this token sent more than %s requests per second (burst %d): wait Retry-After seconds, then send fewer requests",
				formatRate(float64(s.cfg.TokenRate)), s.cfg.TokenBurst)))
			return
		}
		if level == accessWrite {
			if p.Mode != events.ModeReadWrite {
				writeProblem(w, r, errReadOnlyToken())
				return
			}
			if allowed, wait := s.writeLim.take(p.TokenID, s.now()); !allowed {
				writeProblem(w, r, errRateLimited(retryAfter(wait), fmt.Sprintf(
					"this token sent more than %s writes per second (burst %d): wait Retry-After seconds, then send fewer changes",
					formatRate(float64(s.cfg.WriteRate)), s.cfg.WriteBurst)))
				return
			}
			if free, need, ok := s.spaceLeft(); !ok {
				writeProblem(w, r, errInsufficientStorage(free, need))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuseToken answers a refused token: 401, or 429 once the client at key
// has used up its refusals (DefaultFailedAuthBurst, refilled at
// DefaultFailedAuthRate). Every refusal is counted.
func (s *server) refuseToken(w http.ResponseWriter, r *http.Request, key netip.Addr) {
	now := s.now()
	if allowed, wait := s.failLim.take(key, now); !allowed {
		writeProblem(w, r, errRateLimited(retryAfter(wait), fmt.Sprintf(
			"this client address sent more than %d refused tokens: wait Retry-After seconds, then send a valid token",
			s.cfg.FailedAuthBurst)))
		return
	}
	writeProblem(w, r, errTokenInvalid())
}

// WriteReserve is the disk space writes leave free: 64 MiB or 1% of the
// filesystem, whichever is more. Below it, writes through the API get 507
// so that the log keeps room for sweeps and the disk never fills.
func WriteReserve(total uint64) uint64 {
	return max(64<<20, total/100)
}

// spaceLeft reports whether the database's disk is above the write
// reserve, with the free space and the reserve.
func (s *server) spaceLeft() (free, need uint64, ok bool) {
	if s.space == nil {
		return 0, 0, true
	}
	free, total, err := s.space.DiskSpace()
	if err != nil {
		return 0, 0, true
	}
	need = WriteReserve(total)
	return free, need, free >= need
}

// TokenActor is the actor of a token's edits in the log: its name, for
// people, and its id, which is unique for good (a revoked token's name
// may be given to a new one): "ansible (tok_3kF9aZ1qPx)".
func TokenActor(p projections.Principal) string {
	return p.Name + " (" + p.TokenID + ")"
}
