package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

// tailPoll is how often a log tail without serve looks for new events, and
// how long it waits before trying again when the database is busy.
const tailPoll = 250 * time.Millisecond

// tailLockTimeout bounds each short open of the database by a tail
// without serve; a serve that starts meanwhile waits at most this long.
const tailLockTimeout = 100 * time.Millisecond

// followLog writes every event from seq from on (0: the events appended
// after it starts) as JSON lines until ctx ends. While serve runs it
// follows serve through the control socket. While serve does not run it
// opens the database only for each short read, so that serve (or another
// admin command) can start meanwhile; it then switches to the socket and
// goes on from the next seq, and back again when serve stops.
func followLog(ctx context.Context, cfg *config.Config, from uint64, includeSecrets bool, w io.Writer) error {
	sw := &seqWriter{w: w, next: from, includeSecrets: includeSecrets}
	for ctx.Err() == nil {
		if s, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg)); ok {
			err := s.LogTail(ctx, tailReq{From: sw.next, IncludeSecrets: includeSecrets}, sw)
			// A stream that ended cleanly leaves its connection idle in
			// this client's pool, which the next round does not use.
			s.client.CloseIdleConnections()
			if err != nil && ctx.Err() == nil && sw.err != nil {
				return sw.err // stdout is gone
			}
		} else if err := readNew(ctx, cfg, sw); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(tailPoll):
		}
	}
	return nil
}

// readNew opens the database, writes the events from sw.next to the head
// and closes it. A database held by another process is left for the next
// poll.
func readNew(ctx context.Context, cfg *config.Config, sw *seqWriter) error {
	st, err := openStoreWithin(cfg, tailLockTimeout, openReadOnly)
	if errors.Is(err, store.ErrLocked) {
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	if sw.next == 0 {
		sw.next = st.Head() + 1
	}
	enc := json.NewEncoder(sw)
	err = st.Scan(ctx, sw.next, func(e events.Envelope) error { return enc.Encode(shown(e, sw.includeSecrets)) })
	if ctx.Err() != nil {
		return nil // the tail ends
	}
	return err
}

// seqWriter passes JSON lines of events through and remembers the seq
// after the last one, where a tail resumes.
type seqWriter struct {
	w              io.Writer
	next           uint64
	err            error
	includeSecrets bool
}

func (s *seqWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
		return n, err
	}
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var e struct {
			Seq uint64 `json:"seq"`
		}
		if json.Unmarshal(line, &e) == nil && e.Seq >= s.next {
			s.next = e.Seq + 1
		}
	}
	return n, nil
}
