package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events/bus"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/sources"
)

// Sensor is the sensor side: the scheduler's sink, which keeps each run's
// event in the outbox, and the sender that publishes the outbox.
type Sensor struct {
	// Name is the sensor's name, as the central allows it.
	Name string
	// Interval is its shortest source interval (the central's silence
	// clock runs at three of them).
	Interval time.Duration
	Outbox   *Outbox
	// Publisher publishes to JetStream (NewPublisher).
	Publisher message.Publisher
	Log       zerolog.Logger
	// Batch is how many entries one pass publishes before removing them
	// (default 64). Retry is the first wait after a failed publish
	// (default 500ms, doubling to RetryMax, default 10s).
	Batch           int
	Retry, RetryMax time.Duration
	// Sent, when set, is called after each entry JetStream acknowledged.
	Sent func(e Entry)
}

// NewPublisher returns watermill's JetStream publisher on nc. Closing it
// closes nc.
func NewPublisher(nc *nats.Conn, log zerolog.Logger) (message.Publisher, error) {
	p, err := wmjs.NewPublisher(wmjs.PublisherConfig{Conn: nc, Logger: bus.NewLogger(log),
		// The publisher sends to its stream config's Name: make that the
		// topic given to Publish, the sensor's own subject.
		ConfigureStream: func(topic string) jetstream.StreamConfig { return jetstream.StreamConfig{Name: topic} }})
	if err != nil {
		return nil, fmt.Errorf("remote: publisher: %w", err)
	}
	return p, nil
}

// Record implements scheduler.Sink: the run's event, written whole (the
// central has no base to write against), goes to the outbox, on disk
// before Record returns.
func (s *Sensor) Record(ctx context.Context, run sources.Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e, err := ingest.RunEvent(run)
	if err != nil {
		return err
	}
	key, err := s.Outbox.Put(run.Instance.Kind, e)
	if err != nil {
		return err
	}
	s.Log.Debug().Str("observation", e.ID).Str("event_type", e.Kind).Uint64("outbox_key", key).Msg("observation stored")
	return nil
}

// Run publishes the outbox in order until ctx is done: each pass takes
// the front entries, publishes them one by one (each waits for
// JetStream's acknowledgement), then removes those acknowledged. A
// failed publish stops the pass; the entry and those after it wait for
// the next one, after a backoff.
func (s *Sensor) Run(ctx context.Context) error {
	batch, wait, maxWait := s.Batch, s.Retry, s.RetryMax
	if batch <= 0 {
		batch = 64
	}
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	backoff := wait
	down := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.Outbox.Wake():
		}
		n, err := s.pass(ctx, batch)
		switch {
		case errors.Is(err, ErrClosed) || ctx.Err() != nil:
			return nil
		case err != nil:
			if !down {
				s.Log.Warn().Str("reason", err.Error()).Int("waiting", s.Outbox.Len()).Msg("could not send to the central; observations wait in the outbox")
			}
			down = true
			timer.Reset(backoff)
			backoff = min(2*backoff, maxWait)
			continue
		}
		if down {
			s.Log.Info().Msg("sending to the central again")
			down = false
		}
		backoff = wait
		if n == batch {
			timer.Reset(0) // more waiting
		} else {
			timer.Reset(maxWait) // a periodic look, besides the wake-ups
		}
	}
}

// pass publishes up to batch entries and reports how many it sent.
func (s *Sensor) pass(ctx context.Context, batch int) (int, error) {
	entries, err := s.Outbox.Peek(batch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	var done []uint64
	var perr error
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		m, err := Encode(Observation{Sensor: s.Name, Kind: e.Kind, Interval: s.Interval, Event: e.Event})
		if err != nil {
			// An entry that cannot be encoded never will be: drop it
			// loudly rather than block the outbox for good.
			s.Log.Error().Err(err).Str("observation", e.Event.ID).Msg("dropped an observation that cannot be sent")
			done = append(done, e.Key)
			continue
		}
		if err := s.Publisher.Publish(SubjectFor(s.Name), m); err != nil {
			perr = fmt.Errorf("remote: publish %s: %w", e.Event.ID, err)
			break
		}
		done = append(done, e.Key)
		if s.Sent != nil {
			s.Sent(e)
		}
	}
	if err := s.Outbox.Remove(done...); err != nil {
		return 0, err
	}
	return len(done), perr
}
