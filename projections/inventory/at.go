package inventory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math/bits"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// The inventory at an instant (GET /api/devices?at=, /api/diff): after
// every event, each device the event touched whose history fields
// (history.Device: names, MAC, addresses, ports, edits, presence,
// attachment...) changed gets a row with those fields as they are now;
// a device that goes gets an empty row (a tombstone). The view at T is
// each device's newest row at or before T: one seek per device, exact by
// construction (the rows are the projection's own state after each
// event), whatever change produced it.
//
//	inventory.history  key = device id + 0x00 + time (12) + seq (8)   value = history.Device JSON, or empty
//
// The time of a row is its event's time, raised to the newest time
// applied before (the log's times may step back a little), so "rows at or
// before T" is exactly the prefix of the log a replay up to T applies
// (store.CopyLog stops at the first event after T). A retention purge
// with a history cut keeps each device's newest row before the cut (the
// device as it was at the cut) and drops the older ones.
const bucketHistory = "inventory.history"

// bucketHistoryByTime lists the rows a retention purge has not yet
// looked at, by time: key = time (12) + seq (8) + device id, no value.
// A purge reads it from the start up to its cut, so its work is the rows
// written since the last purge, not the whole history.
const bucketHistoryByTime = "inventory.history_by_time"

// Keys in bucketMeta: the earliest instant the rows can show (absent
// until the first event is applied; empty: the beginning of the log),
// and the time of the last applied event, as clamped.
var (
	metaHistFrom = []byte("history_from")
	metaHistLast = []byte("history_last")
)

// histState is the memory side of the history rows.
type histState struct {
	seeded  bool
	seed    maphash.Seed
	fp      map[string]uint64  // fingerprint of each device's newest row
	touched map[string]*device // devices marked dirty by the event being applied
	last    time.Time          // clamped time of the last applied event
	// lastDirty: last moved since the last Flush, which stores it (a Put
	// per event cost about 3 % of a rebuild's applying).
	lastDirty bool
	needBase  bool // no history_from yet: write every device's row at the next event
	// baseFrom: the devices of the base existed before the next event
	// (the rows begin with it); else the history begins with the log.
	baseFrom bool
	// roots maps each device merged into another to the root of its
	// group, as the rows last written show it (nil: nothing merged).
	roots map[string]string
}

func (h *histState) reset() {
	if !h.seeded {
		h.seed, h.seeded = maphash.MakeSeed(), true
	}
	h.fp = map[string]uint64{}
	h.touched = map[string]*device{}
	h.last, h.lastDirty = time.Time{}, false
	h.needBase = false
	h.baseFrom = false
	h.roots = nil
}

// touch notes that the event being applied changed d (called by
// markDirty).
func (h *histState) touch(d *device) {
	if h.touched != nil {
		h.touched[d.ID] = d
	}
}

// sawTime notes the time of an event the inventory does not read: a
// replay up to T stops at the first event after T whatever its kind, so
// the rows' clock moves with every event. (Stored with the next row's
// event; after a restart in between, it restarts from the last stored.)
func (h *histState) sawTime(t time.Time) {
	if t = t.UTC(); t.After(h.last) {
		h.last = t
	}
}

// loadHistory rebuilds the memory side after Load: the fingerprints of
// the devices as stored (the newest rows were written from them).
func (i *Inventory) loadHistory(tx *bolt.Tx) error {
	h := &i.hist
	h.roots = i.groupRoots()
	groups := i.mergeGroups()
	for id := range i.devs {
		h.fp[id] = i.viewFingerprint(id, groups)
	}
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		h.needBase, h.baseFrom = true, len(i.devs) > 0
		return nil
	}
	if v := mb.Get(metaHistLast); len(v) == timeKeyLen {
		h.last = keyTime(v)
	}
	h.needBase = mb.Get(metaHistFrom) == nil
	h.baseFrom = len(i.devs) > 0
	return nil
}

// recordHistory writes the history rows of the event just applied.
func (i *Inventory) recordHistory(em *emitter, prepared any) error {
	h := &i.hist
	t := em.ev.Time.UTC()
	if t.Before(h.last) {
		t = h.last
	}
	if !t.Equal(h.last) {
		h.last, h.lastDirty = t, true
	}
	if h.needBase {
		// The first event since the rows began (a database written before
		// they existed, or a projection restored from such a snapshot):
		// the devices as they are now are the base; before it, 410. An
		// inventory that was empty before the event starts with the log.
		var from []byte
		if h.baseFrom {
			from = timeKey(t)
		}
		h.roots = i.groupRoots()
		groups := i.mergeGroups()
		for _, id := range i.sortedIDs() {
			if err := i.putViewRow(em, t, id, groups); err != nil {
				return err
			}
			h.fp[id] = i.viewFingerprint(id, groups)
		}
		if err := em.put(bucketMeta, metaHistFrom, from); err != nil {
			return err
		}
		h.needBase = false
	}
	for id := range i.deleted {
		if _, ok := h.fp[id]; ok && i.devs[id] == nil {
			if err := em.putHistory(id, t, nil); err != nil {
				return err
			}
			delete(h.fp, id)
		}
	}
	// The rows are the devices as the API shows them: a device merged
	// into another is a row naming its root, and a root the union of its
	// group. So a change of a member is a change of its root's row, and a
	// merge, a separation or a purge that moves a device in or out of a
	// group rewrites every device whose root it changed.
	if len(i.merges) > 0 || len(h.roots) > 0 {
		roots := i.groupRoots()
		for id, r := range roots {
			if old, ok := h.roots[id]; !ok || old != r {
				h.touched[id], h.touched[r] = i.devs[id], i.devs[r]
				if ok {
					h.touched[old] = i.devs[old]
				}
			}
		}
		for id, old := range h.roots {
			if _, ok := roots[id]; !ok {
				h.touched[id], h.touched[old] = i.devs[id], i.devs[old]
			}
		}
		for id := range h.touched {
			if r, ok := roots[id]; ok {
				h.touched[r] = i.devs[r]
			}
		}
		h.roots = roots
	}
	groups := i.mergeGroups() // once per event, not once per device
	for id, d := range h.touched {
		if d == nil || i.devs[id] != d {
			if _, ok := h.fp[id]; ok && i.devs[id] == nil {
				if err := em.putHistory(id, t, nil); err != nil {
					return err
				}
				delete(h.fp, id)
			}
			continue
		}
		fp := i.viewFingerprint(id, groups)
		if old, ok := h.fp[id]; ok && old == fp {
			continue
		}
		if err := i.putViewRow(em, t, id, groups); err != nil {
			return err
		}
		h.fp[id] = fp
	}
	clear(h.touched)
	if p, ok := prepared.(*events.RetentionPurged); ok && p.HistoryBefore != nil {
		return compactHistory(em.tx, p.HistoryBefore.UTC())
	}
	return nil
}

// groupRoots maps each device merged into another to the root of its
// group (nil when nothing is merged). The caller holds the lock.
func (i *Inventory) groupRoots() map[string]string {
	var out map[string]string
	for id := range i.merges {
		if _, ok := i.parentOf(id); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = i.rootOf(id)
		}
	}
	return out
}

// viewFingerprint is the fingerprint of the row of device id (which
// exists) as i.hist.roots shows it: of its root for a merged device, of
// the union of its group (groups: mergeGroups) for a root.
func (i *Inventory) viewFingerprint(id string, groups map[string][]*device) uint64 {
	h := &i.hist
	if r, ok := h.roots[id]; ok {
		var m maphash.Hash
		m.SetSeed(h.seed)
		m.WriteString("merged into\x00")
		m.WriteString(r)
		return m.Sum64()
	}
	return h.fingerprint(i.viewIn(groups, i.devs[id]))
}

// putViewRow writes the history row of device id at t: the device as the
// API shows it, or, for a device merged into another, a row naming its
// root (histRow.MergedInto). groups is mergeGroups.
func (i *Inventory) putViewRow(em *emitter, t time.Time, id string, groups map[string][]*device) error {
	var doc histRow
	if r, ok := i.hist.roots[id]; ok {
		doc = histRow{ID: id, MergedInto: r}
	} else {
		doc = i.viewIn(groups, i.devs[id]).historyDoc()
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("inventory: encode history of %s: %w", id, err)
	}
	return em.putHistory(id, t, js)
}

// putHistory writes one history row (nil: a tombstone) and its time
// index key.
func (em *emitter) putHistory(id string, t time.Time, v []byte) error {
	if err := em.put(bucketHistory, histKey(id, t, em.ev.Seq), v); err != nil {
		return err
	}
	k := binary.BigEndian.AppendUint64(timeKey(t), em.ev.Seq)
	return em.put(bucketHistoryByTime, append(k, id...), nil)
}

// histKey is the key of a history row.
func histKey(id string, t time.Time, seq uint64) []byte {
	k := make([]byte, 0, len(id)+1+timeKeyLen+8)
	k = append(k, id...)
	k = append(k, 0)
	k = append(k, timeKey(t)...)
	return binary.BigEndian.AppendUint64(k, seq)
}

// histSeekKey sorts after every row of id at or before t.
func histSeekKey(id []byte, t time.Time) []byte {
	k := make([]byte, 0, len(id)+1+timeKeyLen+9)
	k = append(k, id...)
	k = append(k, 0)
	k = append(k, timeKey(t)...)
	return append(k, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
}

// splitHistKey returns the device id and the time of a history key.
func splitHistKey(k []byte) (id []byte, t time.Time, ok bool) {
	n := len(k) - 1 - timeKeyLen - 8
	if n < 1 || k[n] != 0 {
		return nil, time.Time{}, false
	}
	return k[:n], keyTime(k[n+1:]), true
}

// compactHistory drops the rows older than cut, but each device's newest
// row before cut (unless a tombstone), which shows it as it was at cut;
// and moves history_from to cut. It visits the rows before cut that no
// purge has visited (bucketHistoryByTime), in time order: each one
// supersedes the row of its device before it (a base kept by an earlier
// purge or a row visited just before), which goes; a tombstone goes too.
func compactHistory(tx *bolt.Tx, cut time.Time) error {
	b, tb := tx.Bucket([]byte(bucketHistory)), tx.Bucket([]byte(bucketHistoryByTime))
	if b == nil || tb == nil {
		return fmt.Errorf("history buckets missing")
	}
	limit := timeKey(cut)
	var visited [][]byte
	c, hc := tb.Cursor(), b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:min(len(k), timeKeyLen)], limit) < 0; k, _ = c.Next() {
		if len(k) <= timeKeyLen+8 {
			return fmt.Errorf("history time key %x: malformed", k)
		}
		visited = append(visited, bytes.Clone(k))
	}
	for _, k := range visited {
		id, t, seq := k[timeKeyLen+8:], keyTime(k), binary.BigEndian.Uint64(k[timeKeyLen:])
		hk := histKey(string(id), t, seq)
		v := b.Get(hk)
		if v == nil {
			return fmt.Errorf("history row %x of time key %x missing", hk, k)
		}
		hc.Seek(hk)
		if pk, _ := hc.Prev(); pk != nil {
			if pid, _, ok := splitHistKey(pk); ok && bytes.Equal(pid, id) {
				if err := hc.Delete(); err != nil {
					return fmt.Errorf("purge history: %w", err)
				}
			}
		}
		if len(v) == 0 {
			if err := b.Delete(hk); err != nil {
				return fmt.Errorf("purge history: %w", err)
			}
		}
		if err := tb.Delete(k); err != nil {
			return fmt.Errorf("purge history: %w", err)
		}
	}
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		return fmt.Errorf("bucket %q missing", bucketMeta)
	}
	if v := mb.Get(metaHistFrom); len(v) == timeKeyLen && !keyTime(v).Before(cut) {
		return nil
	}
	if err := mb.Put(metaHistFrom, timeKey(cut)); err != nil {
		return fmt.Errorf("purge history: %w", err)
	}
	return nil
}

// fingerprint hashes d's history fields: two states with the same
// history.Device have the same fingerprint (addresses and names are
// combined in any order, as the document sorts them). Each string is
// hashed on its own (maphash) and mixed into the sum in order.
func (h *histState) fingerprint(d *device) uint64 {
	m := fpMix{seed: h.seed}
	m.str(d.name(), d.MAC, d.vendor)
	m.ptr(d.Label)
	m.ptr(d.Group)
	m.ptr(d.Type)
	m.ptr(d.Notes)
	var flags uint64
	if d.Ignored {
		flags |= 1
	}
	if d.Watched {
		flags |= 2
	}
	m.num(flags)
	m.str(d.Presence)
	m.num(uint64(d.FirstSeen.UnixNano()))
	var set uint64
	for _, n := range d.Names {
		sub := fpMix{seed: h.seed}
		sub.str(n.Src, n.Val.Name)
		set += sub.sum()
	}
	m.num(set)
	set = 0
	for _, a := range d.Addrs {
		sub := fpMix{seed: h.seed}
		sub.str(a.IP, a.Network)
		sub.num(uint64(a.FirstSeen.UnixNano()))
		if a.RetiredAt != nil {
			sub.num(1)
			sub.num(uint64(a.RetiredAt.UnixNano()))
		} else {
			sub.num(0)
		}
		set += sub.sum()
	}
	m.num(set)
	m.num(uint64(len(d.Addrs)))
	for _, p := range d.Ports {
		m.num(uint64(p.Port))
	}
	m.num(0xff00)
	for _, s := range d.Sources {
		m.str(s)
	}
	m.num(0xff01)
	if a := d.Attached; a != nil {
		m.num(1)
		m.str(a.Source, a.DeviceID, a.Peer, a.Port, a.SSID, a.Band)
	}
	return m.sum()
}

// fpMix folds values into a 64-bit fingerprint, in order: each string
// by its own maphash, each step a bijection of the state for a given
// value (so that values in another order or split another way give
// another sum).
type fpMix struct {
	seed maphash.Seed
	h    uint64
	n    uint64
}

func (m *fpMix) num(x uint64) {
	m.n++
	m.h = bits.RotateLeft64(m.h^x^m.n<<56, 31) * 0x9e3779b97f4a7c15
}

func (m *fpMix) str(ss ...string) {
	for _, s := range ss {
		m.num(uint64(len(s)))
		m.num(maphash.String(m.seed, s))
	}
}

func (m *fpMix) ptr(p *string) {
	if p == nil {
		m.num(1)
		return
	}
	m.num(2)
	m.str(*p)
}

// sum finishes the fingerprint (a final avalanche, so that sums of
// several are well spread).
func (m *fpMix) sum() uint64 {
	x := m.h ^ m.n
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// histRow is a stored history row: the history fields of a device, in
// the layout rows have had since they exist (names as source → name,
// ports as numbers). history.Device is the API's shape of it (view).
type histRow struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Names      map[string]string   `json:"names"` // source -> name
	MAC        *string             `json:"mac"`
	Vendor     *string             `json:"vendor"`
	Addresses  []history.Address   `json:"addresses"`
	Ports      []int               `json:"ports"`
	Label      *string             `json:"label"`
	Group      *string             `json:"group"`
	Type       *string             `json:"type"`
	Notes      *string             `json:"notes"`
	Ignored    bool                `json:"ignored"`
	Watched    bool                `json:"watched"`
	Presence   string              `json:"presence"`
	AttachedTo *history.Attachment `json:"attached_to"`
	FirstSeen  time.Time           `json:"first_seen"`
	Sources    []string            `json:"sources"`
	MergedInto string              `json:"merged_into,omitempty"`
}

// view is the row as the API shows a device at an instant: names and
// ports in the live device's shapes, mac_random from the MAC.
func (r *histRow) view() history.Device {
	d := history.Device{
		ID: r.ID, Name: r.Name, Names: make(map[string]history.Name, len(r.Names)), MAC: r.MAC, Vendor: r.Vendor,
		Addresses: r.Addresses, Ports: make([]history.Port, 0, len(r.Ports)), Label: r.Label, Group: r.Group, Type: r.Type,
		Notes: r.Notes, Ignored: r.Ignored, Watched: r.Watched, Presence: r.Presence, AttachedTo: r.AttachedTo,
		FirstSeen: r.FirstSeen, Sources: r.Sources,
	}
	for src, n := range r.Names {
		d.Names[src] = history.Name{Name: n}
	}
	for _, p := range r.Ports {
		d.Ports = append(d.Ports, history.Port{Port: uint16(p), Proto: "tcp", Service: ServiceOf(uint16(p))})
	}
	if d.Addresses == nil {
		d.Addresses = []history.Address{}
	}
	if d.Sources == nil {
		d.Sources = []string{}
	}
	if r.MAC != nil {
		if hw, err := net.ParseMAC(*r.MAC); err == nil && len(hw) > 0 {
			d.MACRandom = hw[0]&0x02 != 0
		}
	}
	return d
}

// historyDoc builds d's history row. The caller holds the write lock
// (or the read lock).
func (d *device) historyDoc() histRow {
	v := histRow{
		ID:        d.ID,
		Name:      d.name(),
		Names:     make(map[string]string, len(d.Names)),
		Label:     clonePtr(d.Label),
		Group:     clonePtr(d.Group),
		Type:      clonePtr(d.Type),
		Notes:     clonePtr(d.Notes),
		Ignored:   d.Ignored,
		Watched:   d.Watched,
		Presence:  d.Presence,
		FirstSeen: d.FirstSeen.UTC(),
		Addresses: make([]history.Address, 0, len(d.Addrs)),
		Ports:     make([]int, 0, len(d.Ports)),
		Sources:   append([]string{}, d.Sources...),
	}
	for _, n := range d.Names {
		v.Names[n.Src] = n.Val.Name
	}
	if d.MAC != "" {
		m := d.MAC
		v.MAC = &m
	}
	if d.vendor != "" {
		vd := d.vendor
		v.Vendor = &vd
	}
	for _, a := range d.Addrs {
		ha := history.Address{IP: a.IP, Network: a.Network, FirstSeen: a.FirstSeen.UTC()}
		if a.RetiredAt != nil {
			r := a.RetiredAt.UTC()
			ha.RetiredAt = &r
		}
		v.Addresses = append(v.Addresses, ha)
	}
	slices.SortFunc(v.Addresses, func(a, b history.Address) int { return cmp.Compare(a.IP, b.IP) })
	for _, p := range d.Ports {
		v.Ports = append(v.Ports, int(p.Port))
	}
	if a := d.Attached; a != nil {
		at := &history.Attachment{Source: a.Source, Peer: a.Peer, Port: a.Port, SSID: a.SSID, Band: a.Band}
		if a.DeviceID != "" {
			id := a.DeviceID
			at.DeviceID = &id
		}
		v.AttachedTo = at
	}
	return v
}

// histReader is one read of the history rows.
type histReader struct {
	b    *bolt.Bucket
	c    *bolt.Cursor
	from time.Time
}

// viewHistory runs fn in a read transaction of the history rows after
// checking that at (every instant given) is within the kept history.
func (i *Inventory) viewHistory(ctx context.Context, ats []time.Time, fn func(r *histReader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	i.mu.RLock()
	db, last, pending, baseFrom := i.db, i.hist.last, i.hist.needBase, i.hist.baseFrom
	i.mu.RUnlock()
	if db == nil {
		return fmt.Errorf("inventory: history: %w", ErrNotLoaded)
	}
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketHistory))
		mb := tx.Bucket([]byte(bucketMeta))
		if b == nil || mb == nil {
			return fmt.Errorf("inventory: history: buckets missing")
		}
		r := &histReader{b: b, c: b.Cursor()}
		v := mb.Get(metaHistFrom)
		switch {
		case len(v) == timeKeyLen:
			r.from = keyTime(v)
		case v == nil && pending && baseFrom:
			// Rows begin with the next event.
			r.from = last.Add(time.Nanosecond)
		}
		for _, at := range ats {
			if at.Before(r.from) {
				return &history.CompactedError{At: at, Earliest: r.from}
			}
		}
		return fn(r)
	})
}

// at returns the row of id at t (nil when the device did not exist).
func (r *histReader) at(id []byte, t time.Time) ([]byte, error) {
	var v []byte
	k, _ := r.c.Seek(histSeekKey(id, t))
	if k == nil {
		k, v = r.c.Last()
	} else {
		k, v = r.c.Prev()
	}
	if k == nil {
		return nil, nil
	}
	kid, _, ok := splitHistKey(k)
	if !ok || !bytes.Equal(kid, id) || len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// all returns every device that existed at each instant of ts (one list
// per instant), in id order.
func (r *histReader) all(ctx context.Context, ts ...time.Time) ([][]history.Device, error) {
	out := make([][]history.Device, len(ts))
	for j := range out {
		out[j] = []history.Device{}
	}
	n := 0
	for k, _ := r.c.First(); k != nil; {
		if n++; n%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		id, _, ok := splitHistKey(k)
		if !ok {
			return nil, fmt.Errorf("history key %x: malformed", k)
		}
		id = bytes.Clone(id)
		for j, t := range ts {
			v, err := r.at(id, t)
			if err != nil {
				return nil, err
			}
			if v == nil {
				continue
			}
			var row histRow
			if err := json.Unmarshal(v, &row); err != nil {
				return nil, fmt.Errorf("history of %s: %w", id, err)
			}
			if row.MergedInto != "" {
				continue // shown as part of its root
			}
			out[j] = append(out[j], row.view())
		}
		// The next device: id + 0x01 sorts after every row of id (id +
		// 0x00 + ...) and before the rows of any longer id.
		k, _ = r.c.Seek(append(id, 1))
	}
	return out, nil
}

// HistoryFrom is the earliest instant at= can show: the start of the kept
// history rows (a retention purge moves it). The zero time means every
// instant of the log can be shown.
func (i *Inventory) HistoryFrom(ctx context.Context) (time.Time, error) {
	var from time.Time
	err := i.viewHistory(ctx, nil, func(r *histReader) error {
		from = r.from
		return nil
	})
	return from, err
}

// StoredHistoryFrom reads the start of the kept history rows from tx
// without a loaded inventory (a command on a database opened read-only).
// ok is false when none is stored: the rows begin with the log.
func StoredHistoryFrom(tx *bolt.Tx) (from time.Time, ok bool) {
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		return time.Time{}, false
	}
	if v := mb.Get(metaHistFrom); len(v) == timeKeyLen {
		return keyTime(v), true
	}
	return time.Time{}, false
}

// DeviceAt is the device id as it was at t. It returns
// projections.ErrNotFound when the device did not exist then, and a
// *history.CompactedError when t is before the kept history.
func (i *Inventory) DeviceAt(ctx context.Context, id string, t time.Time) (history.Device, error) {
	var d history.Device
	err := i.viewHistory(ctx, []time.Time{t}, func(r *histReader) error {
		v, err := r.at([]byte(id), t)
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("inventory: device %q at %s: %w", id, t.UTC().Format(time.RFC3339Nano), projections.ErrNotFound)
		}
		var row histRow
		if err := json.Unmarshal(v, &row); err != nil {
			return err
		}
		if row.MergedInto != "" {
			return &MergedError{ID: id, Into: row.MergedInto}
		}
		d = row.view()
		return nil
	})
	if err != nil {
		return history.Device{}, fmt.Errorf("inventory: device at: %w", err)
	}
	return d, nil
}

// DevicesAt is every device as it was at t, by name (case-insensitive),
// then id.
func (i *Inventory) DevicesAt(ctx context.Context, t time.Time) ([]history.Device, error) {
	lists, err := i.listsAt(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("inventory: devices at: %w", err)
	}
	sortByName(lists[0])
	return lists[0], nil
}

// listsAt reads every device at each instant of ts (histReader.all),
// with the read-ahead beside the walk.
func (i *Inventory) listsAt(ctx context.Context, ts ...time.Time) ([][]history.Device, error) {
	var lists [][]history.Device
	stop := func() int { return 0 }
	err := i.viewHistory(ctx, ts, func(r *histReader) error {
		stop = i.startReadAhead(ctx, r.b.Tx().DB(), ts)
		var err error
		lists, err = r.all(ctx, ts...)
		return err
	})
	stop() // after the transaction: see startReadAhead
	return lists, err
}

// sortByName sorts ds in the list's default order (history.Order{}).
func sortByName(ds []history.Device) {
	slices.SortFunc(ds, func(a, b history.Device) int { return history.Order{}.Compare(&a, &b) })
}

// StatsAt is Stats over the devices as they were at t.
func (i *Inventory) StatsAt(ctx context.Context, t time.Time) (history.Stats, error) {
	ds, err := i.DevicesAt(ctx, t)
	if err != nil {
		return history.Stats{}, err
	}
	st := history.Stats{
		At:         t.UTC(),
		Devices:    len(ds),
		ByPresence: map[string]int{presenceOnline: 0, presenceOffline: 0, presenceQuiet: 0},
		ByGroup:    map[string]int{},
		ByNetwork:  map[string]int{},
		BySource:   map[string]int{},
	}
	var newest *history.Device
	for k := range ds {
		d := &ds[k]
		st.ByPresence[d.Presence]++
		if d.Group != nil {
			st.ByGroup[*d.Group]++
		}
		var nets []string
		for _, a := range d.Addresses {
			if a.RetiredAt == nil && a.Network != "" && !slices.Contains(nets, a.Network) {
				nets = append(nets, a.Network)
				st.ByNetwork[a.Network]++
			}
		}
		for _, s := range d.Sources {
			st.BySource[s]++
		}
		if d.Watched {
			st.Watched++
		}
		if d.Ignored {
			st.Ignored++
		}
		if newest == nil || d.FirstSeen.After(newest.FirstSeen) || (d.FirstSeen.Equal(newest.FirstSeen) && d.ID > newest.ID) {
			newest = d
		}
	}
	st.NewestDevice = newest
	return st, nil
}

// Diff is what changed between from and to: devices added, removed, and
// those whose history.DiffFields differ.
func (i *Inventory) Diff(ctx context.Context, from, to time.Time) (history.Diff, error) {
	out := history.Diff{From: from.UTC(), To: to.UTC(), Added: []history.Device{}, Removed: []history.Device{}, Changed: []history.Changed{}}
	lists, err := i.listsAt(ctx, from, to)
	if err != nil {
		return history.Diff{}, fmt.Errorf("inventory: diff: %w", err)
	}
	a, b := lists[0], lists[1]
	before := make(map[string]*history.Device, len(a))
	for k := range a {
		before[a[k].ID] = &a[k]
	}
	for k := range b {
		d := &b[k]
		old, ok := before[d.ID]
		if !ok {
			out.Added = append(out.Added, *d)
			continue
		}
		delete(before, d.ID)
		if fields := diffFields(old, d); len(fields) > 0 {
			out.Changed = append(out.Changed, history.Changed{ID: d.ID, Name: d.Name, Fields: fields})
		}
	}
	for _, d := range a {
		if _, gone := before[d.ID]; gone {
			out.Removed = append(out.Removed, d)
		}
	}
	sortByName(out.Added)
	sortByName(out.Removed)
	slices.SortFunc(out.Changed, func(x, y history.Changed) int {
		return cmp.Or(cmp.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name)), cmp.Compare(x.ID, y.ID))
	})
	return out, nil
}

// diffFields compares the history.DiffFields of two states of a device.
func diffFields(a, b *history.Device) map[string]history.FieldChange {
	out := map[string]history.FieldChange{}
	for _, f := range history.DiffFields {
		x, y := fieldValue(a, f), fieldValue(b, f)
		if !reflect.DeepEqual(x, y) {
			out[f] = history.FieldChange{From: x, To: y}
		}
	}
	return out
}

// fieldValue is one of history.DiffFields of d, as the API writes it.
func fieldValue(d *history.Device, f string) any {
	switch f {
	case "name":
		return d.Name
	case "names":
		return d.Names
	case "mac":
		return d.MAC
	case "addresses":
		return d.Addresses
	case "ports":
		return d.Ports
	case "vendor":
		return d.Vendor
	case "label":
		return d.Label
	case "group":
		return d.Group
	case "type":
		return d.Type
	case "notes":
		return d.Notes
	case "ignored":
		return d.Ignored
	case "watched":
		return d.Watched
	case "presence":
		return d.Presence
	case "attached_to":
		return d.AttachedTo
	}
	return nil
}
