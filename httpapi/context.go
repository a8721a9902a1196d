package httpapi

import (
	"context"
	"net/netip"

	"github.com/jocasta/jocasta/projections"
)

type ctxKey struct{}

// reqState is the per-request state the middleware chain fills in. One
// pointer is stored in the context by the first middleware, so later
// steps do not allocate new contexts.
type reqState struct {
	id        string
	client    netip.Addr
	principal projections.Principal
	authed    bool
	// route is the matched route's path template, for metrics.
	route string
}

func withState(ctx context.Context, st *reqState) context.Context {
	return context.WithValue(ctx, ctxKey{}, st)
}

func stateFrom(ctx context.Context) *reqState {
	if st, ok := ctx.Value(ctxKey{}).(*reqState); ok {
		return st
	}
	return &reqState{}
}

// PrincipalFromContext returns who an authenticated request acts as. The
// MCP handler mounted at /mcp uses it to name the actor of edits and to
// check the token's mode. ok is false outside authenticated routes.
func PrincipalFromContext(ctx context.Context) (p projections.Principal, ok bool) {
	st := stateFrom(ctx)
	return st.principal, st.authed
}

// RequestIDFromContext returns the request id (the X-Request-Id header of
// the response), or "" outside the server's handler.
func RequestIDFromContext(ctx context.Context) string {
	return stateFrom(ctx).id
}

// ClientAddrFromContext returns the client address as resolved through
// server.trusted_proxies. The address is also written to r.RemoteAddr
// (with port 0 when it came from a forwarding header) for handlers that
// cannot import this package, such as the UI.
func ClientAddrFromContext(ctx context.Context) netip.Addr {
	return stateFrom(ctx).client
}
