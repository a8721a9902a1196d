// Package httpapi is jocasta's HTTP server: the JSON API under /api, the
// MCP endpoint at /mcp (a handler passed in) and the web interface on
// every other path (a handler passed in).
//
// New builds the whole http.Handler from a Config (the server.* settings)
// and Deps (Inventory, Commander, Authenticator, Readiness: interfaces
// declared here and implemented by the projections and the command side;
// httpapi imports events and projections for their types only).
//
// # Layout
//
//   - router.go lists every method and path and builds the middleware
//     chain; params.go reads path variables and query parameters. They are
//     the only files that use gorilla/mux.
//   - middleware.go (request id, client address, access log, recovery,
//     CORS, client rate limit), auth.go (tokens, modes, token and
//     failed-token limits), clientaddr.go (trusted proxies), ratelimit.go.
//   - One file per resource: devices.go, changes.go (change log and
//     scans), health.go (livez, readyz, openapi.json, stats, groups).
//   - problem.go and respond.go: handlers return errors; one writeError
//     turns them into RFC 9457 problem documents and logs server failures.
//   - An Inventory that also implements DeviceJSONReader hands devices
//     over already encoded: GET /api/devices and /api/devices/{id} then
//     write its bytes (a page framed around them, in a pooled buffer),
//     byte for byte what encoding the typed values gives (a test compares
//     both paths over a real inventory).
//   - openapi.yaml (embedded) describes every endpoint, parameter, body,
//     response and problem. Package apitest validates responses against it;
//     every response the tests receive goes through it, and a full test run
//     fails if a documented (operation, status) pair is never exercised.
//
// # Decisions the contract left open
//
//   - Unknown paths under /api are 404 problems whatever the token; a
//     method a path does not take is a 405 with Allow, before
//     authentication. gorilla/mux v1.8.1 loses method mismatches when a
//     later route matches the method, so each path dispatches on the method
//     itself.
//   - 401: a missing Authorization header (slug token-missing), a
//     malformed one (wrong scheme, not exactly one space, not token68,
//     repeated) and a refused token (token-invalid) all answer
//     WWW-Authenticate: Bearer realm="jocasta", error="invalid_token", as
//     DECISIONS prescribes for every 401 (RFC 6750 would leave the error
//     out for a missing token; DECISIONS is binding). The header check looks only at
//     syntax (never length or value) before the Authenticator, which
//     compares in constant time. Problem details never say whether a token
//     was unknown, expired or revoked.
//   - Checks of a PATCH, in order: token (401), token rate (429), mode
//     (403), query (400), an id no device can have (404), content type
//     (415), size (413), body (400), unknown device (404).
//   - PATCH /api/devices/{id}: null clears label, group, type or notes
//     (listed in DeviceEdited.Cleared); null for ignored means false; an
//     empty string is refused (null is how a field is cleared); control
//     characters are refused (notes may hold tab, CR, LF); an object with
//     no member is a 400 (an edit that changes nothing is a mistake, and
//     appending an empty event helps nobody). Duplicate members and data
//     after the object are 400s.
//   - Traffic and DNS: parameters are checked (400), then the device (404
//     device-not-found), then the answer is a 404 not-recorded naming the
//     plugin kinds that would record them.
//   - /api/devices/{id}/events answers 404 for an unknown device; a
//     deleted device's log stays readable with /api/events?device=<id>.
//   - /api/groups is a list page like the others (sorted by name; paged
//     here, the cursor is base64url("g" + last name)).
//   - An empty q means no filter; every other parameter refuses an empty
//     value. Query problems list every bad parameter, sorted by name.
//   - The client address is the connection's peer unless the peer is a
//     trusted proxy: then RFC 7239 Forwarded (preferred) or
//     X-Forwarded-For is walked right to left past trusted hops; a hop that
//     is not an address stops the walk at the trusted hop that reported
//     it; a Forwarded header that does not parse is ignored. The result is
//     written to r.RemoteAddr for the UI and MCP handlers (port 0 when it
//     came from a header) and is available from ClientAddrFromContext.
//   - Rate limits are token buckets: per token, per client address (an
//     IPv6 client by its /64, over every path, including the UI) and per
//     client address for refused tokens (past the limit, requests that
//     carry a token get 429 without being checked; requests without a
//     token are not counted). Buckets live in maps swept at most once a
//     minute on the request path, so no goroutine runs.
//   - CORS applies to /api only, exact Origin match; no Access-Control-*
//     header is ever sent for an empty list or an unlisted origin (Vary:
//     Origin is sent on /api once the list is not empty, for caches). No
//     credentials: tokens travel in the Authorization header.
//   - /mcp (and /mcp/...) is served behind token authentication and both
//     rate limits when server.mcp.enabled; any token mode may reach it, and
//     the MCP handler checks modes per tool with PrincipalFromContext.
//   - The access log never records headers or the query string (secrets
//     must never be put in a path). The request's logger, carrying
//     request_id, is in the context for zerolog.Ctx.
//   - The API always shows collections as [] or {} and times in UTC, even
//     if a projection returns nil or a local time (copies are made; the
//     projection's values are not changed).
package httpapi
