package inventory

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// TestChangesAfter follows the change feed in small steps and checks it
// gives every entry of the change log once, in log order, never splitting
// one event's entries, and the same entries (ids included) after a
// reload from the rows.
func TestChangesAfter(t *testing.T) {
	h := newHarness(t, Options{OnlineWindow: 15 * time.Minute})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h.sweep(sweepAt(t0, host("192.0.2.10", "00:1b:63:00:00:01", "dns=a.lab"), host("192.0.2.11", "00:1b:63:00:00:02")))
	h.sweep(sweepAt(t0.Add(5*time.Minute), host("192.0.2.10", "00:1b:63:00:00:01", "dns=alpha.lab"), host("192.0.2.12", "00:1b:63:00:00:03")))
	ids := h.inv.sortedIDs()
	label, group := "nas", "lab"
	h.edit(ids[0], "ann", events.DeviceEdited{Label: &label, Group: &group}, t0.Add(6*time.Minute))
	h.tick(t0.Add(time.Hour))

	all := h.entries() // oldest first
	if len(all) < 6 {
		t.Fatalf("only %d entries to follow", len(all))
	}
	follow := func(inv *Inventory, step int) []projections.ChangeEntry {
		var got []projections.ChangeEntry
		after := uint64(0)
		for range 100 {
			page, next, err := inv.ChangesAfter(context.Background(), after, step)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				if next != after {
					t.Fatalf("an empty page moved the cursor from %d to %d", after, next)
				}
				return got
			}
			for i := 1; i < len(page); i++ {
				if page[i].Seq < page[i-1].Seq {
					t.Fatalf("out of log order: %d after %d", page[i].Seq, page[i-1].Seq)
				}
			}
			if next != page[len(page)-1].Seq {
				t.Fatalf("next %d, want the last entry's seq %d", next, page[len(page)-1].Seq)
			}
			got = append(got, page...)
			after = next
		}
		t.Fatal("the feed never ended")
		return nil
	}
	for _, step := range []int{1, 2, 3, 1000} {
		if diff := cmp.Diff(all, follow(h.inv, step)); diff != "" {
			t.Fatalf("step %d: the feed differs from the change log (-log +feed):\n%s", step, diff)
		}
	}
	// The same after a reload from the rows (as after a restart).
	if diff := cmp.Diff(all, follow(h.load(), 2)); diff != "" {
		t.Fatalf("after reload (-before +after):\n%s", diff)
	}
	// Following from the last seq gives nothing new.
	last := all[len(all)-1].Seq
	if page, next, _ := h.inv.ChangesAfter(context.Background(), last, 10); len(page) != 0 || next != last {
		t.Fatalf("after the last seq: %d entries, next %d", len(page), next)
	}
}
