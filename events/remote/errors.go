package remote

import "errors"

// ErrRefused is returned (wrapped) for a message the central will never
// append: an unknown sensor, an event kind a sensor may not send, or a
// malformed message. Such a message is acknowledged and logged, so that
// it cannot block the stream.
var ErrRefused = errors.New("refused")

// ErrClosed is returned by an outbox used after Close.
var ErrClosed = errors.New("outbox closed")
