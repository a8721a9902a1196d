package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jocasta/jocasta/projections"
)

// jsonCacheMax bounds the bytes of the documents cached at one inventory
// version: about 2,300 devices of 900 bytes, a couple of dozen pages of
// 100 (the pages and searches clients come back to), while the heap,
// and so the process, stays small with a large inventory (the collector
// lets the heap grow to twice what is live, so each cached byte costs
// two of RSS). Past the bound the cache evicts (CLOCK: a document read
// since the hand last passed gets a second chance), and a document of
// more than a sixteenth of it is never cached.
const jsonCacheMax = 2 << 20

// encodedDevice is a device's API document as of one inventory version.
type encodedDevice struct {
	version uint64
	json    []byte
	ref     atomic.Bool // read since the clock hand last passed
}

// docSlots holds each device's cached document, one atomic slot per
// device, apart from the device model: the model only gives each device
// its slot number. Slots are added and freed (and the slice grown) under
// the inventory's write lock; documents are read and stored under its
// read lock, without another lock.
type docSlots struct {
	slots []*atomic.Pointer[encodedDevice]
	spare []int // freed slots
}

// add gives d a slot (a freed one when there is one).
func (s *docSlots) add(d *device) {
	if k := len(s.spare) - 1; k >= 0 {
		d.slot, s.spare = s.spare[k], s.spare[:k]
		s.slots[d.slot].Store(nil)
		return
	}
	d.slot = len(s.slots)
	s.slots = append(s.slots, &atomic.Pointer[encodedDevice]{})
}

// free returns d's slot, dropping its document.
func (s *docSlots) free(d *device) {
	s.slots[d.slot].Store(nil)
	s.spare = append(s.spare, d.slot)
}

// of is d's slot.
func (s *docSlots) of(d *device) *atomic.Pointer[encodedDevice] { return s.slots[d.slot] }

// clear drops every document (a new version).
func (s *docSlots) clear() {
	for _, p := range s.slots {
		p.Store(nil)
	}
}

// jsonCache holds the documents cached at one inventory version. The
// documents live in the inventory's docSlots, read without a lock; the
// cache keeps the ring of cached devices the CLOCK hand sweeps.
type jsonCache struct {
	version uint64
	max     int64
	docs    *docSlots

	mu    sync.Mutex
	ring  []jsonSlot
	free  []int // indexes of empty slots
	hand  int
	bytes int64
}

type jsonSlot struct {
	d *device // nil: empty
	e *encodedDevice
}

// jsonCacheNow returns the document cache of the current version. The
// first call after a change drops every device's older document, so they
// are collected rather than kept until the device is read again. The
// caller holds the read lock.
func (i *Inventory) jsonCacheNow() *jsonCache {
	i.idxMu.Lock()
	defer i.idxMu.Unlock()
	c := i.cache()
	if c.json == nil {
		c.json = &jsonCache{version: i.version, max: jsonCacheMax, docs: &i.docs}
		i.docs.clear()
	}
	return c.json
}

// cachedJSON returns d's document of the current version, nil when it is
// not cached, and marks it read. The caller holds the read lock; the
// bytes are shared and must not be modified.
func (i *Inventory) cachedJSON(d *device) []byte {
	e := i.docs.of(d).Load()
	if e == nil || e.version != i.version {
		return nil
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return e.json
}

// encodeDevice returns d's API document: json.Marshal of its view with
// every time in UTC, exactly what the API writes for the typed view. The
// caller holds the read lock.
func encodeDevice(d *device) ([]byte, error) {
	v := d.view()
	utcView(&v)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("inventory: encode device %s: %w", d.ID, err)
	}
	return b, nil
}

// keep caches b as d's document, evicting others until it fits. The
// caller holds the inventory's read lock, so the version cannot move.
func (c *jsonCache) keep(d *device, b []byte) {
	n := int64(len(b))
	if n > jsonCacheMax/16 || n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.docs.of(d).Load(); e != nil && e.version == c.version {
		return // another reader cached it
	}
	// n fits in max, so while it does not fit beside the others some slot
	// is full; each pass of the hand clears the second chances.
	for c.bytes+n > c.max {
		s := &c.ring[c.hand]
		if s.d != nil && !s.e.ref.Swap(false) {
			c.docs.of(s.d).CompareAndSwap(s.e, nil)
			c.bytes -= int64(len(s.e.json))
			*s = jsonSlot{}
			c.free = append(c.free, c.hand)
		}
		c.hand = (c.hand + 1) % len(c.ring)
	}
	e := &encodedDevice{version: c.version, json: b}
	slot := jsonSlot{d: d, e: e}
	if k := len(c.free) - 1; k >= 0 {
		c.ring[c.free[k]], c.free = slot, c.free[:k]
	} else {
		c.ring = append(c.ring, slot)
	}
	c.bytes += n
	c.docs.of(d).Store(e)
}

// utcView puts every time of v in UTC, as the API shows them. v's times
// are its own copies (view clones them).
func utcView(v *projections.Device) {
	v.FirstSeen, v.LastSeen = v.FirstSeen.UTC(), v.LastSeen.UTC()
	for k, n := range v.Names {
		n.LastConfirmed = n.LastConfirmed.UTC()
		v.Names[k] = n
	}
	for k, e := range v.Evidence {
		e.Time = e.Time.UTC()
		v.Evidence[k] = e
	}
	for k := range v.Addresses {
		a := &v.Addresses[k]
		a.FirstSeen, a.LastSeen = a.FirstSeen.UTC(), a.LastSeen.UTC()
		if a.RetiredAt != nil {
			*a.RetiredAt = a.RetiredAt.UTC()
		}
	}
	for k := range v.Ports {
		p := &v.Ports[k]
		p.FirstSeen, p.LastSeen = p.FirstSeen.UTC(), p.LastSeen.UTC()
	}
}

// AppendDevicesJSON appends to dst the devices ListDevices would return
// for f, each encoded as the API shows it (see [Inventory.DeviceJSON])
// and separated by commas, and returns the extended buffer and the
// page's next cursor (nil on the last page). Writing into the caller's
// buffer spares a slice per request. Documents are encoded on first use
// after a change and cached on their device (see jsonCacheMax) until the
// next change (every Apply and Load is one), so Apply and replays never
// encode anything.
func (i *Inventory) AppendDevicesJSON(ctx context.Context, dst []byte, f projections.DeviceFilter) ([]byte, *string, error) {
	q, err := newDeviceQuery(f)
	if err != nil {
		return dst, nil, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	start := len(dst)
	var c *jsonCache
	next, err := i.pickDevices(ctx, q, func(d *device) error {
		if len(dst) > start {
			dst = append(dst, ',')
		}
		b := i.cachedJSON(d)
		if b == nil {
			var err error
			if b, err = encodeDevice(d); err != nil {
				return err
			}
			if c == nil {
				c = i.jsonCacheNow()
			}
			c.keep(d, b)
		}
		dst = append(dst, b...)
		return nil
	})
	if err != nil {
		return dst[:start], nil, err
	}
	return dst, next, nil
}

// DeviceJSON returns one device encoded as the API shows it: exactly
// json.Marshal of [Inventory.Device]'s answer with every time in UTC. It
// returns an error wrapping projections.ErrNotFound for an unknown id.
// It reads the cache AppendDevicesJSON fills but does not fill it: a
// page needs a hundred documents, a single read one. The bytes are
// shared and must not be modified.
func (i *Inventory) DeviceJSON(ctx context.Context, id string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	d, err := i.lookupView(id) // a merged device is a *MergedError
	if err != nil {
		return nil, err
	}
	if b := i.cachedJSON(d); b != nil {
		return b, nil
	}
	return encodeDevice(d)
}
