package inventory

import (
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/jocasta/jocasta/projections"
)

const (
	presenceOnline  = projections.PresenceOnline
	presenceOffline = projections.PresenceOffline
	presenceQuiet   = projections.PresenceQuiet
)

// presenceHeap orders online devices that are not overdue by last
// sighting (then id), so the next to pass the window is on top.
type presenceHeap []*device

func (h presenceHeap) Len() int { return len(h) }
func (h presenceHeap) Less(a, b int) bool {
	if c := h[a].LastSeen.Compare(h[b].LastSeen); c != 0 {
		return c < 0
	}
	return h[a].ID < h[b].ID
}
func (h presenceHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].heapIdx = a
	h[b].heapIdx = b
}
func (h *presenceHeap) Push(x any) {
	d := x.(*device)
	d.heapIdx = len(*h)
	*h = append(*h, d)
}
func (h *presenceHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	d.heapIdx = -1
	return d
}

// heapUpdate puts d in the heap, or moves it after its LastSeen changed.
func (i *Inventory) heapUpdate(d *device) {
	if d.heapIdx >= 0 {
		heap.Fix(&i.heap, d.heapIdx)
		return
	}
	heap.Push(&i.heap, d)
}

// heapRemove takes d out of the heap if it is in it.
func (i *Inventory) heapRemove(d *device) {
	if d.heapIdx >= 0 {
		heap.Remove(&i.heap, d.heapIdx)
	}
}

// absentFor is the presence of a device past the window.
func absentFor(d *device) string {
	if d.Watched {
		return presenceQuiet
	}
	return presenceOffline
}

// hasEvidence reports whether a complete sweep that covers one of d's
// current addresses started after d was last seen: the only evidence
// that a device is gone. A sweep that failed or was cut short is none.
// An address with no network is covered by any complete sweep.
func (i *Inventory) hasEvidence(d *device) bool {
	for _, a := range d.Addrs {
		if a.RetiredAt != nil {
			continue
		}
		if a.Network == "" {
			if i.anyDone.After(d.LastSeen) {
				return true
			}
		}
		for _, m := range i.sweeps {
			if m.start.After(d.LastSeen) && m.prefix.Contains(a.ip) {
				return true
			}
		}
	}
	return false
}

// evaluate applies the presence rule at time at: a device is online
// while its last sighting is within the online window; past it, it goes
// offline (quiet when watched) once there is evidence of absence.
// Devices past the window without evidence stay online, marked overdue,
// and are checked again when a complete sweep brings new evidence
// (evidenceChanged).
func (i *Inventory) evaluate(em *emitter, at time.Time, evidenceChanged bool) error {
	cut := at.Add(-i.opts.OnlineWindow)
	var check []*device
	for i.heap.Len() > 0 && i.heap[0].LastSeen.Before(cut) {
		d := heap.Pop(&i.heap).(*device)
		d.Overdue = true
		i.overdue[d.ID] = d
		i.markDirty(d)
		check = append(check, d)
	}
	if evidenceChanged {
		check = check[:0]
		for _, id := range sortedKeys(i.overdue) {
			check = append(check, i.overdue[id])
		}
	}
	var gone []*device
	for _, d := range check {
		if d.Presence == presenceOnline && d.Overdue && d.LastSeen.Before(cut) && i.hasEvidence(d) {
			gone = append(gone, d)
		}
	}
	slices.SortFunc(gone, func(a, b *device) int {
		if c := a.LastSeen.Compare(b.LastSeen); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	for _, d := range gone {
		state := absentFor(d)
		d.Presence = state
		d.Overdue = false
		delete(i.overdue, d.ID)
		d.Evidence.Presence = evid{Source: em.ev.Source, Time: at}
		i.markDirty(d)
		kind, verb := projections.ChangeOffline, "went offline"
		if state == presenceQuiet {
			kind, verb = projections.ChangeQuiet, "went quiet"
		}
		if err := em.emit(kind, d.ID, fmt.Sprintf("%s %s (last seen %s)", d.display(), verb, summaryTime(d.LastSeen)),
			&projections.OldNew{Old: presenceOnline, New: state}); err != nil {
			return err
		}
	}
	return nil
}

// NextPresenceDeadline returns the earliest time at which an online
// device passes the online window (its last sighting plus the window),
// and false when no online device is waiting for one. Devices already
// past the window but without evidence of absence are not counted: only
// a sweep can change them.
func (i *Inventory) NextPresenceDeadline() (time.Time, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if len(i.heap) == 0 {
		return time.Time{}, false
	}
	return i.heap[0].LastSeen.Add(i.opts.OnlineWindow), true
}
