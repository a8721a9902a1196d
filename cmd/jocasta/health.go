package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/store"
)

// verifyEvery is how often serve re-checks the whole hash chain in the
// background: damage in the middle of the log (a bad disk sector, a hand
// edit) must not wait for an admin to run `jocasta log verify`.
const verifyEvery = 24 * time.Hour

// health is serve's readiness (httpapi.Readiness): the projections have
// caught up, the database has not failed, and the last background verify
// found the log intact.
type health struct {
	caughtUp interface{ Ready() bool }
	st       *store.Store

	mu     sync.Mutex
	damage string // the last verify's finding; "" while intact or unchecked
}

// Ready implements httpapi.Readiness.
func (h *health) Ready() bool { return h.NotReadyDetail() == "" && h.caughtUp.Ready() }

// NotReadyDetail implements httpapi.ReadinessDetail.
func (h *health) NotReadyDetail() string {
	if err := h.st.Err(); err != nil {
		return "the database failed to commit a write (its outcome is unknown) and the service is stopping for a restart; see its log"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.damage != "" {
		return h.damage
	}
	return ""
}

// runVerify verifies the log once soon after start, then every interval,
// until ctx ends. Verify reads in short chunks, so appends go on while it
// runs. Damage is logged at error level and makes the service not ready
// until a later verify finds the log intact again (after a restore).
func (h *health) runVerify(ctx context.Context, log zerolog.Logger, first, interval time.Duration) error {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		rep, err := h.st.Verify(ctx, nil)
		switch {
		case errors.Is(err, context.Canceled), ctx.Err() != nil:
			return nil
		case err != nil:
			log.Error().Err(err).Msg("background log verify failed to run; it will be retried")
		case !rep.OK:
			d := fmt.Sprintf("the event log is damaged at seq %d (%s): restore a backup, or run jocasta log verify for the details", rep.FirstBad, rep.Reason)
			h.mu.Lock()
			h.damage = d
			h.mu.Unlock()
			log.Error().Uint64("first_bad", rep.FirstBad).Str("reason", rep.Reason).Uint64("checked", rep.Checked).
				Msg("background log verify: the event log is damaged; the service reports not ready")
		default:
			h.mu.Lock()
			h.damage = ""
			h.mu.Unlock()
			log.Info().Uint64("checked", rep.Checked).Uint64("head", rep.Head).Str("took", time.Since(start).Round(time.Millisecond).String()).
				Msg("background log verify: the hash chain is intact")
		}
		t.Reset(interval)
	}
}

// dbFailedMsg is logged once, by serve as it stops, when its database
// failed.
const dbFailedMsg = "the database failed to commit a write; the outcome of that write is unknown. Stopping so that a restart opens the database afresh"

// watchStore ends serve with an error when the database fails: bbolt is
// not to be trusted after a failed commit, and a restart by the
// supervisor (systemd, the container runtime) opens the file afresh.
func watchStore(ctx context.Context, st *store.Store) error {
	select {
	case <-ctx.Done():
		return nil
	case <-st.Failed():
		return &dbFailedError{cause: st.Err()} // serve logs it as it stops (stopCause)
	}
}

// dbFailedError is serve's error when its database failed: the outcome
// of a write is unknown (it wraps store.ErrOutcomeUnknown and the commit
// error) and a restart must open the file afresh.
type dbFailedError struct {
	cause error // the commit error that failed the store
	first error // the part that stopped serve first, when not watchStore
}

func (e *dbFailedError) Error() string {
	msg := "the database failed: " + store.ErrOutcomeUnknown.Error() + ": " + e.cause.Error()
	if e.first != nil {
		msg += " (first stopped: " + e.first.Error() + ")"
	}
	return msg
}

func (e *dbFailedError) Unwrap() []error { return []error{store.ErrOutcomeUnknown, e.cause} }

// stopCause is the error serve stops with, given the first error of its
// parts (err) and the store's failure (failed, nil unless a commit
// failed: an append's, or a projection's or the notification ledger's
// through store.Update). A full or failing disk fails every writer of
// the file at once, and the part whose commit failed may stop serve a
// moment before watchStore sees the store fail. The
// database's failure is then still the cause to report; the part that
// stopped first is kept in the message.
func stopCause(err, failed error) error {
	var dbErr *dbFailedError
	if failed == nil || errors.As(err, &dbErr) {
		return err
	}
	if err == nil || errors.Is(err, context.Canceled) {
		return &dbFailedError{cause: failed}
	}
	return &dbFailedError{cause: failed, first: err}
}
