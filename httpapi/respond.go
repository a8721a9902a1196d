package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/projections"
)

const (
	contentTypeJSON    = "application/json"
	contentTypeProblem = "application/problem+json"
	// statusClientClosed is logged (never seen by a client) when the
	// client went away before the answer was ready.
	statusClientClosed = 499
)

// handlerFunc is the shape of every API handler: it writes a success
// response itself and returns an error for anything else.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// errorWriter turns handler errors into problem documents. It is the one
// place where request failures are logged (besides the access log).
type errorWriter struct {
	log zerolog.Logger
}

func (e errorWriter) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			e.writeError(w, r, err)
		}
	})
}

// writeError maps err to a problem document: a *problem as it is,
// projections.ErrNotFound to 404, projections.ErrBadCursor to 400 on the
// cursor parameter, and everything else to a 500 that carries only the
// request id (the error itself is logged).
func (e errorWriter) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	var p *problem
	switch {
	case errors.As(err, &p):
		cp := *p
		p = &cp
	case errors.Is(err, projections.ErrBadCursor):
		p = queryError("cursor", "the cursor was not issued by this server: pass next_cursor from the previous page unchanged, or leave cursor out to start over")
	case errors.Is(err, projections.ErrNotFound):
		p = errPathNotFound(r.URL.Path)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client is gone; nobody reads the answer.
		w.WriteHeader(statusClientClosed)
		return
	default:
		e.log.Error().Err(err).Str("request_id", st.id).Str("method", r.Method).
			Str("path", r.URL.Path).Msg("httpapi: request failed")
		p = errInternal()
	}
	writeProblem(w, r, p)
}

// writeProblem writes p with its headers, the request path as instance
// and the request id.
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	p.Instance = r.URL.Path
	p.RequestID = stateFrom(r.Context()).id
	for k, vs := range p.header {
		w.Header()[k] = vs
	}
	body, err := json.Marshal(p)
	if err != nil { // cannot happen: only strings and ints
		body = []byte(`{"type":"` + problemTypePrefix + slugInternal + `","title":"Internal server error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	writeBody(w, r, p.Status, contentTypeProblem, body)
}

// writeJSON writes v as a JSON document with the given status.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("httpapi: encoding response: %w", err)
	}
	writeBody(w, r, status, contentTypeJSON, body)
	return nil
}

func writeBody(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // a write error means the client left; nothing to do
	}
}
