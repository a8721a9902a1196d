package inventory

import (
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
//
// A sighting does not move a device in the heap: its entry keeps the
// LastSeen it was pushed with, a lower bound (LastSeen only grows), and
// the entry is brought up to date when it reaches the top (normalizeTop).
// An up-to-date top has the least key, and its key is no more than any
// other device's real LastSeen, so the top is always the device that
// really passes the window first; and a device seen every few minutes is
// re-keyed once per window instead of once per sighting.
type presenceHeap []heapEntry

// heapEntry is one device in the presence heap.
type heapEntry struct {
	key heapKey // d.LastSeen when pushed or last re-keyed: ≤ d.LastSeen
	d   *device
}

// heapKey is a time as integers, cheap to compare.
type heapKey struct {
	sec  int64
	nsec int32
}

func keyOf(t time.Time) heapKey { return heapKey{sec: t.Unix(), nsec: int32(t.Nanosecond())} }

func (h presenceHeap) less(a, b int) bool {
	ka, kb := h[a].key, h[b].key
	switch {
	case ka.sec != kb.sec:
		return ka.sec < kb.sec
	case ka.nsec != kb.nsec:
		return ka.nsec < kb.nsec
	}
	return h[a].d.ID < h[b].d.ID
}

func (h presenceHeap) swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].d.heapIdx = a
	h[b].d.heapIdx = b
}

func (h presenceHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(j, p) {
			return
		}
		h.swap(p, j)
		j = p
	}
}

func (h presenceHeap) down(i0 int) bool {
	i, n := i0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// fix restores the order after the key at j changed.
func (h presenceHeap) fix(j int) {
	if !h.down(j) {
		h.up(j)
	}
}

// push adds d, keyed by its LastSeen.
func (h *presenceHeap) push(d *device) {
	d.heapIdx = len(*h)
	*h = append(*h, heapEntry{key: keyOf(d.LastSeen), d: d})
	h.up(d.heapIdx)
}

// remove takes out the entry at j and returns its device.
func (h *presenceHeap) remove(j int) *device {
	old := *h
	n := len(old) - 1
	if j != n {
		old.swap(j, n)
	}
	d := old[n].d
	old[n] = heapEntry{}
	*h = old[:n]
	if j != n {
		h.fix(j)
	}
	d.heapIdx = -1
	return d
}

// heapUpdate puts d in the heap, or notes that its LastSeen moved: the
// entry is re-keyed when it reaches the top (see presenceHeap).
func (i *Inventory) heapUpdate(d *device) {
	if d.heapIdx < 0 {
		i.heap.push(d)
		return
	}
	if k, e := keyOf(d.LastSeen), &i.heap[d.heapIdx]; k.sec < e.key.sec || (k.sec == e.key.sec && k.nsec < e.key.nsec) {
		// LastSeen never goes back; if it did, the key must follow now.
		e.key = k
		i.heap.fix(d.heapIdx)
	}
}

// normalizeTop re-keys stale entries at the top until the top's key is
// its device's LastSeen.
func (i *Inventory) normalizeTop() {
	for len(i.heap) > 0 {
		e := &i.heap[0]
		k := keyOf(e.d.LastSeen)
		if k == e.key {
			return
		}
		e.key = k
		i.heap.down(0)
	}
}

// heapRemove takes d out of the heap if it is in it.
func (i *Inventory) heapRemove(d *device) {
	if d.heapIdx >= 0 {
		i.heap.remove(d.heapIdx)
	}
}

// absentFor is the presence of a device past the window.
func absentFor(d *device) string {
	if d.Watched {
		return presenceQuiet
	}
	return presenceOffline
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
	for i.normalizeTop(); len(i.heap) > 0 && i.heap[0].d.LastSeen.Before(cut); i.normalizeTop() {
		d := i.heap.remove(0)
		d.Overdue = true
		i.overdue[d.ID] = d
		i.refreshCoverage(d)
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
		d.coverage = nil
		delete(i.overdue, d.ID)
		d.Evidence.Presence = srcEvidOf(em.ev.Source, at)
		i.markDirty(d)
		kind, verb := projections.ChangeOffline, "went offline"
		if state == presenceQuiet {
			kind, verb = projections.ChangeQuiet, "went quiet"
		}
		if err := em.emitPresence(i.groupOnlineBesides(d), kind, d.ID, fmt.Sprintf("%s %s (last seen %s)", d.display(), verb, summaryTime(d.LastSeen)),
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
	// Apply and Load leave the top up to date (normalizeTop).
	return i.heap[0].d.LastSeen.Add(i.opts.OnlineWindow), true
}
