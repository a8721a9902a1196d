package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

func ExampleStore_Append() {
	dir, err := os.MkdirTemp("", "jocasta-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(filepath.Join(dir, "jocasta.db"), store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// cmd rings the bus's doorbell here; hooks run after each commit.
	heads := make(chan uint64, 10)
	s.OnCommit(func(head uint64) { heads <- head })

	ctx := context.Background()
	e, err := events.New(events.KindClockTicked, events.ClockTicked{At: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}, time.Time{})
	if err != nil {
		log.Fatal(err)
	}
	// Append returns once the event is on disk.
	stored, err := s.Append(ctx, e)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("seq", stored[0].Seq, "first in chain:", stored[0].PrevHash == events.ZeroHash)

	// Decide and append in one transaction: the decision reads state
	// that cannot change before its events are appended.
	stored, err = s.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
		seen := store.Checkpoint(tx, "example")
		return []events.Envelope{events.MustNew(events.KindClockTicked, events.ClockTicked{At: time.Unix(int64(seen), 0).UTC()}, time.Time{})}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("seq", stored[0].Seq, "links to seq 1:", stored[0].PrevHash != events.ZeroHash)

	rep, err := s.Verify(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verify ok:", rep.OK, "events:", rep.Checked)
	fmt.Println("hooks saw", <-heads, <-heads)
	// Output:
	// seq 1 first in chain: true
	// seq 2 links to seq 1: true
	// verify ok: true events: 2
	// hooks saw 1 2
}
