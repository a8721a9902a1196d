package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Problem slugs: the type of a problem document is
// "urn:jocasta:problem:" followed by one of these. They are part of the
// API (clients may switch on them) and are listed in openapi.yaml.
const (
	slugInvalidBody         = "invalid-body"
	slugInvalidQuery        = "invalid-query"
	slugTokenMissing        = "token-missing"
	slugTokenInvalid        = "token-invalid"
	slugReadOnlyToken       = "read-only-token"
	slugNotFound            = "not-found"
	slugDeviceNotFound      = "device-not-found"
	slugNotRecorded         = "not-recorded"
	slugMethodNotAllowed    = "method-not-allowed"
	slugBodyTooLarge        = "body-too-large"
	slugUnsupportedType     = "unsupported-media-type"
	slugRateLimited         = "rate-limited"
	slugInternal            = "internal"
	slugNotReady            = "not-ready"
	slugInsufficientDisk    = "insufficient-storage"
	slugMisdirected         = "misdirected-request"
	slugStoreFailed         = "store-failed"
	slugMCPRequest          = "mcp-invalid-request"
	slugDestinationDisabled = "destination-disabled"
	slugMCPSession          = "mcp-session-refused"
)

const problemTypePrefix = "urn:jocasta:problem:"

// problem is an RFC 9457 problem document. Handlers return it as an error;
// writeError writes it. Title and detail say what to change; nothing
// internal goes into them.
type problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail"`
	Instance  string       `json:"instance"`
	RequestID string       `json:"request_id,omitempty"`
	Errors    []fieldError `json:"errors,omitempty"`
	// Earliest is the earliest instant that works, RFC 3339 (history-compacted).
	Earliest string `json:"earliest,omitempty"`
	// MergedInto names the device a merged one is shown as (the
	// device-merged problem, merge.go).
	MergedInto string `json:"merged_into,omitempty"`

	header http.Header // extra response headers (Allow, Retry-After, ...)
}

// fieldError names one bad part of a request: Pointer (RFC 6901) for a
// body member, Parameter for a query parameter. Both are pointers because
// "" is a valid value of each (the whole body; a parameter with an empty
// name).
type fieldError struct {
	Pointer   *string `json:"pointer,omitempty"`
	Parameter *string `json:"parameter,omitempty"`
	Detail    string  `json:"detail"`
}

func (p *problem) Error() string {
	return fmt.Sprintf("httpapi: %d %s: %s", p.Status, p.Type, p.Detail)
}

func newProblem(status int, slug, title, detail string) *problem {
	return &problem{Type: problemTypePrefix + slug, Title: title, Status: status, Detail: detail}
}

func (p *problem) withHeader(k, v string) *problem {
	if p.header == nil {
		p.header = http.Header{}
	}
	p.header.Set(k, v)
	return p
}

// bodyError is a 400 for a request body, with one entry per bad member.
func bodyError(detail string, errs ...fieldError) *problem {
	p := newProblem(http.StatusBadRequest, slugInvalidBody, "Request body is not valid", detail)
	p.Errors = errs
	return p
}

func pointerError(pointer, detail string) fieldError {
	return fieldError{Pointer: &pointer, Detail: detail}
}

// queryError is a 400 naming one query parameter.
func queryError(param, detail string) *problem {
	p := newProblem(http.StatusBadRequest, slugInvalidQuery, "Query parameter is not valid",
		fmt.Sprintf("query parameter %q: %s", param, detail))
	p.Errors = []fieldError{{Parameter: &param, Detail: detail}}
	return p
}

func errDeviceNotFound(id string) *problem {
	return newProblem(http.StatusNotFound, slugDeviceNotFound, "Device not found",
		fmt.Sprintf("no device has id %q: list the devices with GET /api/devices and use one of their ids", id))
}

func errPathNotFound(path string) *problem {
	d := "no resource is at this path"
	if strings.HasPrefix(path, "/api/") || path == "/api" {
		d += ": the API's paths are listed in GET /api/openapi.json"
	}
	return newProblem(http.StatusNotFound, slugNotFound, "Not found", d)
}

func errMCPDisabled() *problem {
	return newProblem(http.StatusNotFound, slugNotFound, "Not found",
		"the MCP endpoint is off: set server.mcp.enabled to true to serve it")
}

// errMCPUnavailable answers /mcp when server.mcp.enabled is true but no
// MCP handler was mounted: saying "set it to true" would mislead.
func errMCPUnavailable() *problem {
	return newProblem(http.StatusNotFound, slugNotFound, "Not found",
		"server.mcp.enabled is true but this server has no MCP endpoint: use the JSON API under /api")
}

func errMethodNotAllowed(method string, allow []string) *problem {
	return newProblem(http.StatusMethodNotAllowed, slugMethodNotAllowed, "Method not allowed",
		fmt.Sprintf("%s is not allowed here: use %s", method, strings.Join(allow, ", "))).
		withHeader("Allow", strings.Join(allow, ", "))
}

func errRateLimited(retryAfterSeconds int, detail string) *problem {
	return newProblem(http.StatusTooManyRequests, slugRateLimited, "Too many requests", detail).
		withHeader("Retry-After", strconv.Itoa(retryAfterSeconds))
}

func errInternal() *problem {
	return newProblem(http.StatusInternalServerError, slugInternal, "Internal server error",
		"the server failed to answer: retry later, and if it persists give the operator this request id")
}

// wwwAuthChallenge is the WWW-Authenticate value of every 401, missing
// token included (DECISIONS: 401 "with WWW-Authenticate: Bearer
// realm="jocasta", error="invalid_token"").
const wwwAuthChallenge = `Bearer realm="jocasta", error="invalid_token"`

func errTokenMissing() *problem {
	return newProblem(http.StatusUnauthorized, slugTokenMissing, "API token required",
		"send an API token in the header Authorization: Bearer <token>; create one on the Tokens page or with jocasta token create").
		withHeader("WWW-Authenticate", wwwAuthChallenge)
}

func errTokenInvalid() *problem {
	return newProblem(http.StatusUnauthorized, slugTokenInvalid, "API token refused",
		"the token is malformed, unknown, expired or revoked: send Authorization: Bearer <token> with an active token from the Tokens page or jocasta token create").
		withHeader("WWW-Authenticate", wwwAuthChallenge)
}

func errReadOnlyToken() *problem {
	return newProblem(http.StatusForbidden, slugReadOnlyToken, "Token may only read",
		"this token has mode read, which allows GET and HEAD only: use a token with mode read_write to change devices")
}

// maxMCPBodyBytes is the largest MCP request body (1 MiB): a tool call's
// arguments are small, and JSON-RPC batches are not larger.
const maxMCPBodyBytes = 1 << 20

// limitMCPBody refuses an MCP request body over maxMCPBodyBytes with a
// problem document, before the MCP server reads it.
func limitMCPBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxMCPBodyBytes {
			writeProblem(w, r, newProblem(http.StatusRequestEntityTooLarge, slugBodyTooLarge, "Request body too large",
				fmt.Sprintf("the body is over %d bytes (1 MiB): send a smaller request", maxMCPBodyBytes)))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxMCPBodyBytes)
		h.ServeHTTP(w, r)
	})
}

// mcpProblems turns the MCP SDK's own refusals, written with http.Error as
// one line of text/plain (a session of another token, an unknown
// session, a missing Accept, a malformed JSON-RPC body...), into problem
// documents like every other error of the server. Everything else (the
// JSON-RPC answers, event streams, 202 and 204) passes untouched.
func mcpProblems(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &plainErrorWriter{ResponseWriter: w}
		h.ServeHTTP(pw, r)
		if pw.status != 0 {
			writeProblem(w, r, mcpProblem(pw.status, strings.TrimSpace(pw.text.String())))
		}
	})
}

// mcpProblem is the problem document of an MCP refusal with status and
// the SDK's text. The text of a 5xx can name internals, so it is not
// passed on.
func mcpProblem(status int, text string) *problem {
	slug, title := slugMCPRequest, "Invalid MCP request"
	switch status {
	case http.StatusForbidden:
		title = "MCP request refused"
		if text == "session user mismatch" {
			slug, title = slugMCPSession, "MCP session refused"
			text = "this MCP session was opened with another API token: open a new session (initialize without Mcp-Session-Id) with this token"
		}
	case http.StatusNotFound:
		slug, title = slugMCPSession, "MCP session not found"
		text = "no open MCP session has this Mcp-Session-Id (it ended, timed out after 30 minutes idle, or serve restarted): initialize a new session"
	case http.StatusMethodNotAllowed:
		slug, title = slugMethodNotAllowed, "Method not allowed"
		text = "use POST for requests, GET for the event stream and DELETE to end a session"
	case http.StatusUnsupportedMediaType:
		slug, title = slugUnsupportedType, "Unsupported media type"
		text = "send MCP requests with Content-Type: application/json"
	case http.StatusRequestEntityTooLarge:
		slug, title = slugBodyTooLarge, "Request body too large"
		text = fmt.Sprintf("the body is over %d bytes (1 MiB): send a smaller request", maxMCPBodyBytes)
	}
	if status >= 500 {
		return errInternal()
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return newProblem(status, slug, title, text)
}

// maxPlainError bounds the text of a refusal kept for its problem
// document; the SDK's are one short line.
const maxPlainError = 1024

// plainErrorWriter holds back an error status written with a text/plain
// body (http.Error's) and keeps the text, for mcpProblems to answer with
// a problem document instead. Any other response goes straight through.
type plainErrorWriter struct {
	http.ResponseWriter
	status      int // the held-back error status; 0 when passing through
	wroteHeader bool
	text        strings.Builder
}

func (w *plainErrorWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	h := w.Header()
	if code >= 400 && strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		w.status = code
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *plainErrorWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.status != 0 {
		if room := maxPlainError - w.text.Len(); room > 0 {
			w.text.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on a flush of a response that goes through (the SDK's
// event streams need it).
func (w *plainErrorWriter) Flush() {
	if w.status != 0 {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *plainErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func errBodyTooLarge() *problem {
	return newProblem(http.StatusRequestEntityTooLarge, slugBodyTooLarge, "Request body too large",
		fmt.Sprintf("the body is over %d bytes (64 KiB): send a smaller body", maxBodyBytes))
}

func errUnsupportedType(got string) *problem {
	d := "send the body with Content-Type: application/json or application/merge-patch+json"
	if got == "" {
		d = "the request has no Content-Type: " + d
	} else {
		d = fmt.Sprintf("content type %q is not accepted: %s", got, d)
	}
	return newProblem(http.StatusUnsupportedMediaType, slugUnsupportedType, "Unsupported media type", d).
		withHeader("Accept-Patch", "application/json, application/merge-patch+json")
}

func errNotReady(detail string) *problem {
	if detail == "" {
		detail = "the projections are still catching up with the event log: retry shortly"
	}
	return newProblem(http.StatusServiceUnavailable, slugNotReady, "Not ready", detail).
		withHeader("Retry-After", "1")
}

// Details of the traffic and DNS endpoints until their plugins exist.
const (
	detailNoTraffic = "no traffic is recorded: enable a flowlistener plugin"
	detailNoDNS     = "no DNS lookups are recorded: enable a dnsnode, dnsfilter1 or dnsfilter2 plugin"
)

func errNotRecorded(detail string) *problem {
	return newProblem(http.StatusNotFound, slugNotRecorded, "Not recorded", detail)
}

// errInsufficientStorage refuses a write while the disk that holds the
// database is nearly full: the event would take space the log may need
// for sweeps, and a full disk fails every write.
func errInsufficientStorage(free, need uint64) *problem {
	return newProblem(http.StatusInsufficientStorage, slugInsufficientDisk, "Not enough disk space",
		fmt.Sprintf("the disk that holds the database has %d MiB free, under the %d MiB that writes keep in reserve: free disk space (or lower retention), then retry",
			free>>20, need>>20)).
		withHeader("Retry-After", "60")
}

func errMisdirected(host string) *problem {
	return newProblem(http.StatusMisdirectedRequest, slugMisdirected, "Unknown host",
		fmt.Sprintf("this server does not answer to the host %q: use one of the names it is configured for", host))
}

// errStoreFailed answers a write the database failed to commit. Its
// outcome is unknown: the failed fsync may or may not have reached the
// disk, and the service restarts to settle it.
func errStoreFailed() *problem {
	return newProblem(http.StatusServiceUnavailable, slugStoreFailed, "Database failed",
		"the database failed to commit the change, so whether it was applied is unknown; the service is restarting: once it answers again, read the device and send the change again if it is missing").
		withHeader("Retry-After", "10")
}
