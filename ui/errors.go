package ui

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
)

// handlerFunc is a page handler: it writes a response, or returns an
// error that writeError turns into the error page.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// pageError is an error shown to the user as a page with its status. Msg
// says what happened and what to do; it never holds internal details.
type pageError struct {
	Status     int
	Title      string
	Msg        string
	RetryAfter time.Duration
}

func (e *pageError) Error() string { return e.Title + ": " + e.Msg }

func errBadRequest(msg string) error {
	return &pageError{Status: http.StatusBadRequest, Title: "Bad request", Msg: msg}
}

func errForbidden(msg string) error {
	return &pageError{Status: http.StatusForbidden, Title: "Refused", Msg: msg}
}

func errNotFound(msg string) error {
	return &pageError{Status: http.StatusNotFound, Title: "Not found", Msg: msg}
}

func errGone(msg string) error {
	return &pageError{Status: http.StatusGone, Title: "Link used", Msg: msg}
}

func errTooMany(retry time.Duration) error {
	return &pageError{Status: http.StatusTooManyRequests, Title: "Too many attempts",
		Msg: "Too many sign-in attempts. Wait a minute and try again.", RetryAfter: retry}
}

// handle runs h and turns its error into a page.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError writes the error page of err: a *pageError as itself, a
// refused command as 409 with its sentence, an unknown device as 404, a
// failed commit as 503, anything else as 500 (logged here, once).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *pageError
	var refused *command.Refused
	var invalid *command.Invalid
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &invalid):
		pe = &pageError{Status: http.StatusBadRequest, Title: "Not saved", Msg: invalidMessage(invalid)}
	case errors.As(err, &refused):
		pe = &pageError{Status: http.StatusConflict, Title: "Not done", Msg: refused.Msg}
	case errors.Is(err, projections.ErrNotFound):
		pe = &pageError{Status: http.StatusNotFound, Title: "Not found", Msg: "There is no such device. It may have been removed by retention."}
	case errors.Is(err, projections.ErrBadCursor):
		pe = &pageError{Status: http.StatusBadRequest, Title: "Bad request", Msg: "The page link is not valid any more. Start again from the first page."}
	case errors.Is(err, projections.ErrWriteFailed):
		s.log.Error().Err(err).Str("path", r.URL.Path).Msg("ui: write failed")
		pe = &pageError{Status: http.StatusServiceUnavailable, Title: "Not saved", Msg: "The database failed to save the change; the service is restarting. Check the page again in a minute."}
	case errors.Is(err, r.Context().Err()):
		return // the client went away
	default:
		s.log.Error().Err(err).Str("path", r.URL.Path).Msg("ui: request failed")
		pe = &pageError{Status: http.StatusInternalServerError, Title: "Something went wrong", Msg: "The server failed to answer this page. The error is in the service log."}
	}
	if pe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(pe.RetryAfter.Seconds()+0.999)))
	}
	s.render(w, r, pe.Status, "error", errorView{Title: pe.Title, Msg: pe.Msg})
}

func invalidMessage(e *command.Invalid) string {
	msg := ""
	for i, f := range e.Fields {
		if i > 0 {
			msg += "; "
		}
		msg += f.Field + ": " + f.Detail
	}
	return msg
}

type (
	commandInvalid = command.Invalid
	commandRefused = command.Refused
)

// userMessage is the sentence a form shows for a refused command.
func userMessage(err error) string {
	var invalid *command.Invalid
	var refused *command.Refused
	var pe *pageError
	switch {
	case errors.As(err, &invalid):
		return invalidMessage(invalid)
	case errors.As(err, &refused):
		return refused.Msg
	case errors.As(err, &pe):
		return pe.Msg
	}
	return "The change failed."
}

// errorView is the error page.
type errorView struct {
	Title, Msg string
}

func (v errorView) PageTitle() string { return v.Title }
