package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Merging devices (device.merged, device.unmerged) is an alias view:
// every device keeps its own row and receives its own sightings exactly
// as if it had never been merged, and a map alias → the device it was
// merged into (its parent) says how the read side joins them. The API
// shows a group (a root and every device whose chain of parents ends at
// it) as the root: see unionOf for how the fields combine. An alias
// answers MergedError. Unmerging removes one link, so the state after a
// merge and its unmerge is the state of a log without them (the change
// log aside, which records both).
//
// Links are direct: merging B (itself the root of C) into A gives C → B
// → A, and the group of A is {A, B, C}; unmerging B from A gives back B
// with C, as before the merge. A link whose device or parent retention
// removed is dropped (dropPurgedMerges), so a device found again under
// the same id does not rejoin silently.

// Change-log kinds of merges (projections.ChangeMerged/ChangeUnmerged,
// the names of their events); the device is the root, data the other
// device's id (new when merged, old when unmerged).
const (
	ChangeMerged   = projections.ChangeMerged
	ChangeUnmerged = projections.ChangeUnmerged
)

// metaMerges is the key in bucketMeta of the merge links (JSON object
// alias id → parent id).
var metaMerges = []byte("merges")

// MergedError is what Device, DeviceJSON and WatchState return for a
// device merged into another. It wraps projections.ErrNotFound, so a
// caller that does not know merges sees an unknown device.
type MergedError struct {
	// ID is the device asked for, Into the root of its group (the
	// device the API shows it as).
	ID, Into string
}

func (e *MergedError) Error() string {
	return fmt.Sprintf("inventory: device %q is merged into %q", e.ID, e.Into)
}

// Unwrap makes a MergedError a projections.ErrNotFound.
func (e *MergedError) Unwrap() error { return projections.ErrNotFound }

// MergedInto is the device the merged one is shown as.
func (e *MergedError) MergedInto() string { return e.Into }

// parentOf returns the device id was merged into, when the link holds
// (both still exist).
func (i *Inventory) parentOf(id string) (string, bool) {
	p, ok := i.merges[id]
	if !ok || i.devs[id] == nil || i.devs[p] == nil {
		return "", false
	}
	return p, true
}

// rootOf follows the parents of id to the root of its group (id itself
// when it is not merged). Links never form a cycle (the parent of a new
// link is a root and the device another one); the bound only guards.
func (i *Inventory) rootOf(id string) string {
	for range len(i.merges) + 1 {
		p, ok := i.parentOf(id)
		if !ok {
			return id
		}
		id = p
	}
	return id
}

// mergeGroups returns, for each root with merged devices, its members
// other than itself, most recently seen first (then by id). Nil when
// nothing is merged. The caller holds a lock.
func (i *Inventory) mergeGroups() map[string][]*device {
	if len(i.merges) == 0 {
		return nil
	}
	out := map[string][]*device{}
	for _, id := range sortedKeys(i.merges) {
		if _, ok := i.parentOf(id); !ok {
			continue
		}
		r := i.rootOf(id)
		out[r] = append(out[r], i.devs[id])
	}
	for _, ms := range out {
		slices.SortFunc(ms, func(a, b *device) int {
			if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return out
}

// groupOf returns every device of d's merged group, its root and its
// members (d among them), or nil when d is not merged with any. The
// caller holds a lock.
func (i *Inventory) groupOf(d *device) []*device {
	if len(i.merges) == 0 {
		return nil
	}
	root := i.rootOf(d.ID)
	ms := i.membersOf(root)
	if len(ms) == 0 {
		return nil
	}
	return append(ms, i.devs[root])
}

// groupOnlineBesides reports whether d is merged with other devices (as
// the root of a group or a member) one of which is online: then a
// change of d's own presence does not change the group's (unionOf: the
// group is online while any member is). The caller holds the lock.
//
// It runs for every presence change once anything is merged, so it walks
// the links without gathering every group (mergeGroups).
func (i *Inventory) groupOnlineBesides(d *device) bool {
	if len(i.merges) == 0 {
		return false
	}
	root := i.rootOf(d.ID)
	if r := i.devs[root]; root != d.ID && r != nil && r.Presence == presenceOnline {
		return true
	}
	for id := range i.merges {
		if id == d.ID {
			continue
		}
		if m := i.devs[id]; m != nil && m.Presence == presenceOnline {
			if _, linked := i.parentOf(id); linked && i.rootOf(id) == root {
				return true
			}
		}
	}
	return false
}

// membersOf returns the members of the group rooted at id other than id,
// as mergeGroups orders them.
func (i *Inventory) membersOf(id string) []*device {
	if len(i.merges) == 0 {
		return nil
	}
	return i.mergeGroups()[id]
}

// viewOf returns d as the API shows it: d itself, or the union of its
// group when devices are merged into it. The caller has checked that d
// is not an alias and holds a lock.
func (i *Inventory) viewOf(d *device) *device { return i.viewIn(i.mergeGroups(), d) }

// viewIn is viewOf with the groups (mergeGroups) already gathered, for
// callers that show many devices.
func (i *Inventory) viewIn(groups map[string][]*device, d *device) *device {
	if ms := groups[d.ID]; len(ms) > 0 {
		return i.unionOf(d, ms)
	}
	return d
}

// lookupView returns the device with id as the API shows it, a
// MergedError for an alias or ErrNotFound. The caller holds a lock.
func (i *Inventory) lookupView(id string) (*device, error) {
	d := i.devs[id]
	if d == nil {
		return nil, fmt.Errorf("inventory: device %q: %w", id, projections.ErrNotFound)
	}
	if _, ok := i.parentOf(id); ok {
		return nil, &MergedError{ID: id, Into: i.rootOf(id)}
	}
	return i.viewOf(d), nil
}

// viewDevices returns every device as the API shows it: aliases left
// out, roots of merges as their union. Without merges it is the devices
// themselves. The caller holds a lock.
func (i *Inventory) viewDevices() []*device {
	out := make([]*device, 0, len(i.devs))
	groups := i.mergeGroups()
	for id, d := range i.devs {
		if groups != nil {
			if _, alias := i.parentOf(id); alias {
				continue
			}
			d = i.viewIn(groups, d)
		}
		out = append(out, d)
	}
	return out
}

// aliasRoots maps each alias to the root of its group (nil without
// merges), for rewriting change-log entries at read. It takes the read
// lock.
func (i *Inventory) aliasRoots() map[string]string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if len(i.merges) == 0 {
		return nil
	}
	out := map[string]string{}
	for id := range i.merges {
		if _, ok := i.parentOf(id); ok {
			out[id] = i.rootOf(id)
		}
	}
	return out
}

// groupIDs returns the ids whose change-log entries the entries of id
// show: id and, for a root, every device merged into it (sorted; nil
// when id has none). It takes the read lock.
func (i *Inventory) groupIDs(id string) []string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	ms := i.membersOf(id)
	if len(ms) == 0 {
		return nil
	}
	ids := []string{id}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// unionOf builds the device the API shows for root and the devices
// merged into it (members, most recently seen first). The copy is memory
// only and never stored; it shares root's document-cache slot (so the
// cache holds the union's document). The fields combine so:
//   - id, key, label, group, type, notes, ignored, watched and their
//     evidence are root's (edits go to the root);
//   - mac (and vendor) root's, else the most recently seen member's;
//     upnp likewise;
//   - names: per source, the most recently confirmed;
//   - presence: online when any member is online, else root's; coverage
//     only while every online member has one (root's first);
//   - first_seen the earliest, last_seen the latest of every member;
//   - addresses: every member's, one per IP (earliest first_seen, latest
//     last_seen, retired only when retired in every member that has it,
//     then at the latest retirement);
//   - ports: every member's, one per port; services and sources the
//     union; seen_by the latest per source;
//   - attached_to: that of the most recently seen member that has one;
//   - the evidence of observed fields: the latest among members.
func (i *Inventory) unionOf(root *device, members []*device) *device {
	all := append([]*device{root}, members...)
	u := *root
	u.Evidence.user = clonePtr(root.Evidence.user) // edits of the union are not root's
	u.Names = nil
	u.Addrs = nil
	u.Ports = nil
	u.Services = nil
	u.Sources = nil
	u.SeenBy = nil
	u.heapIdx = -1
	byRecent := slices.Clone(all)
	slices.SortStableFunc(byRecent, func(a, b *device) int { return b.LastSeen.Compare(a.LastSeen) })
	addrs := map[string]*addrRec{}
	ports := map[uint16]portRec{}
	for _, d := range all {
		for _, n := range d.Names {
			if cur, ok := u.Names.get(n.Src); !ok || n.Val.LastConfirmed.After(cur.LastConfirmed) {
				u.Names.set(n.Src, n.Val)
			}
		}
		if d.FirstSeen.Before(u.FirstSeen) {
			u.FirstSeen = d.FirstSeen
		}
		if d.LastSeen.After(u.LastSeen) {
			u.LastSeen = d.LastSeen
		}
		if d.Presence == presenceOnline && u.Presence != presenceOnline {
			u.Presence = presenceOnline
		}
		for _, a := range d.Addrs {
			cur := addrs[a.IP]
			if cur == nil {
				c := *a
				c.RetiredAt = clonePtr(a.RetiredAt)
				addrs[a.IP] = &c
				continue
			}
			if a.FirstSeen.Before(cur.FirstSeen) {
				cur.FirstSeen = a.FirstSeen
			}
			if a.LastSeen.After(cur.LastSeen) {
				cur.LastSeen = a.LastSeen
				if a.Network != "" {
					cur.Network = a.Network
				}
			}
			switch {
			case a.RetiredAt == nil:
				cur.RetiredAt = nil
			case cur.RetiredAt != nil && a.RetiredAt.After(*cur.RetiredAt):
				cur.RetiredAt = clonePtr(a.RetiredAt)
			}
		}
		for _, p := range d.Ports {
			cur, ok := ports[p.Port]
			if ok {
				if p.FirstSeen.Before(cur.FirstSeen) {
					cur.FirstSeen = p.FirstSeen
				}
				if p.LastSeen.After(cur.LastSeen) {
					cur.LastSeen = p.LastSeen
				}
				p = cur
			}
			ports[p.Port] = p
		}
		for _, s := range d.Services {
			if !slices.Contains(u.Services, s) {
				u.Services = append(u.Services, s)
			}
		}
		for _, s := range d.Sources {
			u.addSource(s)
		}
		for _, e := range d.SeenBy {
			if e.Val.After(u.SeenBy.value(e.Src)) {
				u.SeenBy.set(e.Src, e.Val)
			}
		}
		for _, f := range [...]struct{ u, d *srcEvid }{
			{&u.Evidence.Name, &d.Evidence.Name}, {&u.Evidence.MAC, &d.Evidence.MAC},
			{&u.Evidence.Addresses, &d.Evidence.Addresses}, {&u.Evidence.LastSeen, &d.Evidence.LastSeen},
			{&u.Evidence.Presence, &d.Evidence.Presence}, {&u.Evidence.Ports, &d.Evidence.Ports},
			{&u.Evidence.Services, &d.Evidence.Services}, {&u.Evidence.UPnP, &d.Evidence.UPnP},
		} {
			if f.d.after(*f.u) {
				*f.u = *f.d
			}
		}
	}
	// Coverage (presence unconfirmed) only while no online member is
	// confirmed: root's, else the first online member's.
	u.coverage = nil
	for _, d := range all {
		if d.Presence != presenceOnline {
			continue
		}
		if d.coverage == nil {
			u.coverage = nil
			break
		}
		if u.coverage == nil {
			u.coverage = d.coverage
		}
	}
	for _, ip := range sortedKeys(addrs) {
		u.Addrs = append(u.Addrs, addrs[ip])
	}
	for _, p := range slices.Sorted(mapsKeys(ports)) {
		u.Ports = append(u.Ports, ports[p])
	}
	u.Attached = nil
	for _, d := range byRecent {
		if u.MAC == "" && d.MAC != "" {
			u.MAC = d.MAC
		}
		if u.UPnP == nil && d.UPnP != nil {
			u.UPnP = d.UPnP
		}
		if u.Attached == nil && d.Attached != nil {
			u.Attached = d.Attached
		}
	}
	u.otherMACs = nil
	for _, d := range all {
		if d.MAC != "" && d.MAC != u.MAC && !slices.Contains(u.otherMACs, d.MAC) {
			u.otherMACs = append(u.otherMACs, d.MAC)
		}
	}
	u.BestName = u.computeBestName()
	u.refreshDerived(i.opts.Vendor)
	return &u
}

// mapsKeys lists the keys of m (any order).
func mapsKeys[K comparable, V any](m map[K]V) func(yield func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// applyMerge folds a device.merged: Device joins the group of Into. An
// event the command would have refused (an unknown device, a device
// into itself, into an alias, a device merged elsewhere) changes
// nothing, so replays stay deterministic whatever the log holds; so does
// merging a device already in the group.
func (i *Inventory) applyMerge(em *emitter, p *events.DeviceMerged) error {
	d, into := i.devs[p.Device], i.devs[p.Into]
	if d == nil || into == nil || p.Device == p.Into {
		return nil
	}
	if _, alias := i.parentOf(p.Into); alias {
		return nil
	}
	if _, alias := i.parentOf(p.Device); alias {
		return nil
	}
	i.merges[p.Device] = p.Into
	if err := i.putMerges(em); err != nil {
		return err
	}
	who := em.actor()
	return em.emit(ChangeMerged, into.ID,
		fmt.Sprintf("%s merged %s (%s) into %s", who, d.display(), d.ID, into.display()),
		&projections.OldNew{Old: nil, New: d.ID})
}

// applyUnmerge folds a device.unmerged: Device leaves the group of Into
// (with the devices merged into it), as if never merged. Only a device
// in Into's group is separated.
func (i *Inventory) applyUnmerge(em *emitter, p *events.DeviceUnmerged) error {
	if _, ok := i.parentOf(p.Device); !ok || i.rootOf(p.Device) != p.Into {
		return nil
	}
	delete(i.merges, p.Device)
	if err := i.putMerges(em); err != nil {
		return err
	}
	d, into := i.devs[p.Device], i.devs[p.Into]
	return em.emit(ChangeUnmerged, into.ID,
		fmt.Sprintf("%s separated %s (%s) from %s", em.actor(), d.display(), d.ID, into.display()),
		&projections.OldNew{Old: d.ID, New: nil})
}

// dropPurgedMerges removes the links of devices retention removed (on
// either end), after a retention.purged.
func (i *Inventory) dropPurgedMerges(em *emitter) error {
	changed := false
	for id, p := range i.merges {
		if i.devs[id] == nil || i.devs[p] == nil {
			delete(i.merges, id)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return i.putMerges(em)
}

// putMerges stores the links in the event's transaction.
func (i *Inventory) putMerges(em *emitter) error {
	v, err := json.Marshal(i.merges)
	if err != nil {
		return fmt.Errorf("encode merges: %w", err)
	}
	return em.put(bucketMeta, metaMerges, v)
}

// loadMerges reads the links Load needs.
func (i *Inventory) loadMerges(tx *bolt.Tx) error {
	i.merges = map[string]string{}
	b := tx.Bucket([]byte(bucketMeta))
	if b == nil {
		return nil
	}
	v := b.Get(metaMerges)
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(v, &i.merges); err != nil {
		return fmt.Errorf("inventory: load merges: %w", err)
	}
	if i.merges == nil {
		i.merges = map[string]string{}
	}
	return nil
}

// mergedIndexWalk walks the per-device change index of several devices
// at once, newest first: each call returns the next change key (strictly
// before after, when given) of any of ids, nil at the end. It is
// ListEvents' walk for a device with others merged into it.
func mergedIndexWalk(ib *bolt.Bucket, ids []string, after []byte) func() []byte {
	type head struct {
		c      *bolt.Cursor
		prefix []byte
		k      []byte // current change key, nil when done
	}
	heads := make([]*head, 0, len(ids))
	// set moves h to the index key k (nil, or outside h's device: done).
	set := func(h *head, k []byte) {
		if k == nil || !bytes.HasPrefix(k, h.prefix) {
			h.k = nil
			return
		}
		h.k = k[len(h.prefix):]
	}
	for _, id := range ids {
		h := &head{c: ib.Cursor(), prefix: append([]byte(id), 0)}
		start := append([]byte(id), 1)
		if after != nil {
			start = deviceIndexKey(id, after)
		}
		k, _ := h.c.Seek(start)
		if k == nil {
			k, _ = h.c.Last()
		} else {
			k, _ = h.c.Prev()
		}
		set(h, k)
		heads = append(heads, h)
	}
	return func() []byte {
		var best *head
		for _, h := range heads {
			if h.k != nil && (best == nil || bytes.Compare(h.k, best.k) > 0) {
				best = h
			}
		}
		if best == nil {
			return nil
		}
		out := best.k
		k, _ := best.c.Prev()
		set(best, k)
		return out
	}
}

// keptByMerge reports whether retention must keep d for its merge group
// although d alone could go: d is in a group (as its root or merged into
// it) and some device of the group is protected or was last seen at or
// after cutoff. A group is kept or removed whole, so a merge never comes
// apart because its oldest MAC went quiet (PurgePlan and applyPurge ask
// it). The caller holds a lock.
func (i *Inventory) keptByMerge(d *device, cutoff time.Time) bool {
	for _, m := range i.groupOf(d) {
		if m.protected() || !m.LastSeen.Before(cutoff) {
			return true
		}
	}
	return false
}
