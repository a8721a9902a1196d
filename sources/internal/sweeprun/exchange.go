package sweeprun

import (
	"context"
	"errors"
	"time"
)

// Conn is a socket with deadlines.
type Conn interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Exchange runs read on each of conns, in its own goroutine, while send
// runs in the calling one. Ending ctx unblocks a send waiting for buffer
// space and the readers (both deadlines pass). When send returns, the
// read deadline passes and Exchange waits for every reader: read must
// return nil once its conn's read deadline has passed.
//
// The error is ctx's when ctx ended; otherwise send's error followed by
// the readers', joined.
func Exchange[C Conn](ctx context.Context, conns []C, read func(C) error, send func() error) error {
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Time{})
		_ = c.SetWriteDeadline(time.Time{})
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		for _, c := range conns {
			_ = c.SetWriteDeadline(time.Now())
			_ = c.SetReadDeadline(time.Now())
		}
	})
	readErrs := make(chan error, len(conns))
	for _, c := range conns {
		go func() { readErrs <- read(c) }()
	}

	sendErr := send()
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now())
	}
	var errs []error
	for range conns {
		if err := <-readErrs; err != nil {
			errs = append(errs, err)
		}
	}
	if !stop() {
		<-cancelled
	}
	if sendErr != nil {
		errs = append([]error{sendErr}, errs...)
	}
	if ctx.Err() != nil {
		errs = []error{ctx.Err()}
	}
	return errors.Join(errs...)
}
