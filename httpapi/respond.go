package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events/command"
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
// cursor parameter, projections.ErrWriteFailed to 503 store-failed, and everything else to a 500 that carries only the
// request id (the error itself is logged).
func (e errorWriter) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	var p *problem
	var invalid *command.Invalid
	switch {
	case errors.As(err, &p):
		cp := *p
		p = &cp
	case errors.Is(err, projections.ErrBadCursor):
		p = queryError("cursor", "the cursor was not issued by this server: pass next_cursor from the previous page unchanged, or leave cursor out to start over")
	case errors.Is(err, projections.ErrNotFound):
		p = errPathNotFound(r.URL.Path)
	case errors.As(err, &invalid):
		errs := make([]fieldError, len(invalid.Fields))
		for i, f := range invalid.Fields {
			errs[i] = pointerError(jsonPointer(f.Field), f.Detail)
		}
		p = fieldsProblem(errs)
	case errors.Is(err, projections.ErrWriteFailed):
		e.log.Error().Err(err).Str("request_id", st.id).Str("method", r.Method).
			Str("path", r.URL.Path).Msg("httpapi: the database failed to commit a write")
		p = errStoreFailed()
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

// Page documents written from encoded items are built in pooled buffers:
// a 100-device page is about 90 KB, and allocating one per request would
// make garbage at the rate the API is read. Buffers that grew past
// maxPooledPage (pages of many hundreds of devices) are left to the
// collector, so the pool never holds much memory.
const maxPooledPage = 256 << 10

var pageBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 128<<10) // a default page fits without growing
	return &b
}}

// writeRawPage writes a list page whose items appendItems appends, encoded
// and separated by commas: {"items":[...],"next_cursor":...}, the bytes
// json.Marshal gives for the projections.Page holding them.
func writeRawPage(w http.ResponseWriter, r *http.Request, appendItems func(dst []byte) ([]byte, *string, error)) error {
	bp := pageBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledPage {
			*bp = (*bp)[:0]
			pageBufs.Put(bp)
		}
	}()
	b, next, err := appendItems(append((*bp)[:0], `{"items":[`...))
	*bp = b
	if err != nil {
		return err
	}
	b = append(b, `],"next_cursor":`...)
	if next == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *next)
	}
	b = append(b, '}')
	*bp = b
	writeBody(w, r, http.StatusOK, contentTypeJSON, b)
	return nil
}

// appendJSONString appends s as json.Marshal writes a string. Cursors are
// URL-safe base64, which needs no escaping; anything else goes through
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '=' || c == '.' || c == '~') {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
