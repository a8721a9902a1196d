package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/store"
)

// chunking is a counting projection that applies every 5th event in parts
// first: it logs, in order, each ApplyChunks with the checkpoint it saw
// committed, and each Apply.
type chunking struct {
	counting
	failChunks uint64 // ApplyChunks of that seq fails (once)
	log        []string
}

func (c *chunking) Chunked(ev events.Envelope) bool { return ev.Seq%5 == 0 }

func (c *chunking) ApplyChunks(_ context.Context, db projections.DB, ev events.Envelope) error {
	var cp uint64
	_ = db.View(func(tx *bolt.Tx) error { cp = store.Checkpoint(tx, c.name); return nil })
	c.log = append(c.log, fmt.Sprintf("chunks %d (checkpoint %d)", ev.Seq, cp))
	if ev.Seq == c.failChunks {
		c.failChunks = 0
		return errors.New("injected failure")
	}
	return nil
}

func (c *chunking) Apply(tx *bolt.Tx, ev events.Envelope) error {
	c.log = append(c.log, fmt.Sprintf("apply %d", ev.Seq))
	return c.counting.Apply(tx, ev)
}

func TestChunkerAppliesInParts(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "j.db"))
	defer st.Close()
	head := appendTicks(t, st, 0, 12)
	c := &chunking{counting: counting{name: "c", version: 1}, failChunks: 10}
	plain := &counting{name: "p", version: 1}
	r, err := New(st, []Projection{c, plain}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The parts of 10 fail: everything before it is applied and
	// committed, nothing from 10 on.
	if err := r.CatchUp(context.Background()); err == nil {
		t.Fatal("a failing ApplyChunks was not an error")
	}
	rowsOf(t, st, "c", 9)
	rowsOf(t, st, "p", 9)
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	rowsOf(t, st, "c", head)
	rowsOf(t, st, "p", head)
	var want []string
	for s := uint64(1); s <= head; s++ {
		if s%5 == 0 {
			// Everything before it is committed before its parts.
			want = append(want, fmt.Sprintf("chunks %d (checkpoint %d)", s, s-1))
		}
		if s == 10 {
			want = append(want, "chunks 10 (checkpoint 9)") // the retry
		}
		want = append(want, fmt.Sprintf("apply %d", s))
	}
	if !slices.Equal(c.log, want) {
		t.Fatalf("calls\n%q\nwant\n%q", c.log, want)
	}
}
