package bus

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/rs/zerolog"
)

// TopicAppended is the topic rung after each commit to the log.
const TopicAppended = "log.appended"

// Bus publishes log heads to in-process subscribers.
type Bus struct {
	pubsub *gochannel.GoChannel
	log    zerolog.Logger

	mu     sync.Mutex
	closed bool
}

// New returns a bus logging through log.
func New(log zerolog.Logger) *Bus {
	return &Bus{
		pubsub: gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 64}, NewLogger(log)),
		log:    log,
	}
}

// Ring announces that the log's head is now head. It never returns an
// error: a lost ring is harmless (see the package doc).
func (b *Bus) Ring(head uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	msg := message.NewMessage(watermill.NewShortUUID(), []byte(strconv.FormatUint(head, 10)))
	if err := b.pubsub.Publish(TopicAppended, msg); err != nil {
		b.log.Debug().Err(err).Uint64("seq", head).Msg("bus: ring dropped")
	}
}

// Subscribe returns a channel that receives the newest head after commits,
// until ctx is done or the bus is closed. Rings are coalesced: a slow
// consumer sees at least one value after the last commit, not one per
// commit, and never a head lower than one it was already given.
func (b *Bus) Subscribe(ctx context.Context, name string) (<-chan uint64, error) {
	msgs, err := b.pubsub.Subscribe(ctx, TopicAppended)
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", name, err)
	}
	out := make(chan uint64, 1)
	go func() {
		defer close(out)
		// gochannel may deliver rings out of order: pass on the highest
		// head seen so far, replacing a ring still pending.
		var latest uint64
		for m := range msgs {
			head, _ := strconv.ParseUint(string(m.Payload), 10, 64)
			m.Ack()
			if head > latest {
				latest = head
			}
			select {
			case out <- latest:
			default:
				select {
				case <-out:
				default:
				}
				select {
				case out <- latest:
				default:
				}
			}
		}
	}()
	return out, nil
}

// Close stops the bus; subscribers' channels close.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if err := b.pubsub.Close(); err != nil {
		return fmt.Errorf("bus: close: %w", err)
	}
	return nil
}
