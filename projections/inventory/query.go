package inventory

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// Page sizes of every list.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// clampLimit applies the default and the maximum page size.
func clampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// Sort fields of ListDevices.
const (
	SortName      = "name"
	SortIP        = "ip"
	SortFirstSeen = "first_seen"
	SortLastSeen  = "last_seen"
)

// parseSort splits "-name" into the field and the direction.
func parseSort(s string) (field string, desc bool, err error) {
	if s == "" {
		return SortName, false, nil
	}
	field, desc = strings.CutPrefix(s, "-")
	switch field {
	case SortName, SortIP, SortFirstSeen, SortLastSeen:
		return field, desc, nil
	}
	return "", false, fmt.Errorf("inventory: sort %q: %w (want name, ip, first_seen or last_seen, with - for descending)", s, ErrBadFilter)
}

// queryCache holds what queries derive from the whole device set; it is
// valid while version matches the inventory's.
type queryCache struct {
	version uint64
	sorted  map[string][]*device
	hay     map[string]*haystack // q= text in the order of sorted[field]
	json    *jsonCache
	stats   *projections.Stats
	newest  *device
	groups  []projections.Group
}

// cache returns the current cache, replacing a stale one. The caller
// holds the read lock (so no device changes while the cache is used).
func (i *Inventory) cache() *queryCache {
	if i.idx == nil || i.idx.version != i.version {
		i.idx = &queryCache{version: i.version, sorted: map[string][]*device{}, hay: map[string]*haystack{}}
	}
	return i.idx
}

// sortedBy returns every device in ascending order of field, then id. The
// caller holds the read lock.
func (i *Inventory) sortedBy(field string) []*device {
	i.idxMu.Lock()
	defer i.idxMu.Unlock()
	c := i.cache()
	if s, ok := c.sorted[field]; ok {
		return s
	}
	s := i.viewDevices() // merged devices as their groups (merge.go)
	cmp := deviceCmp(field)
	slices.SortFunc(s, cmp)
	c.sorted[field] = s
	return s
}

// haystackOf returns the q= text of s, the devices sortedBy(field)
// returned. The caller holds the read lock.
func (i *Inventory) haystackOf(field string, s []*device) *haystack {
	i.idxMu.Lock()
	defer i.idxMu.Unlock()
	c := i.cache()
	h, ok := c.hay[field]
	if !ok {
		h = newHaystack(s)
		c.hay[field] = h
	}
	return h
}

// deviceCmp orders devices by field, then id.
func deviceCmp(field string) func(a, b *device) int {
	var byField func(a, b *device) int
	switch field {
	case SortIP:
		byField = func(a, b *device) int { return a.current.Compare(b.current) }
	case SortFirstSeen:
		byField = func(a, b *device) int { return a.FirstSeen.Compare(b.FirstSeen) }
	case SortLastSeen:
		byField = func(a, b *device) int { return a.LastSeen.Compare(b.LastSeen) }
	default:
		byField = func(a, b *device) int { return strings.Compare(a.sortKey, b.sortKey) }
	}
	return func(a, b *device) int {
		if c := byField(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
}

// devCursor is the decoded form of a device-list cursor: the sort it
// belongs to and the sort key and id of the last device returned.
type devCursor struct {
	S string `json:"s"`
	K string `json:"k"`
	I string `json:"i"`
}

// sortKeyString is d's sort key for field as a cursor stores it.
func sortKeyString(d *device, field string) string {
	switch field {
	case SortIP:
		if !d.current.IsValid() {
			return ""
		}
		return d.current.String()
	case SortFirstSeen:
		return d.FirstSeen.UTC().Format(time.RFC3339Nano)
	case SortLastSeen:
		return d.LastSeen.UTC().Format(time.RFC3339Nano)
	}
	return d.sortKey
}

func encodeCursor(v any) string {
	b, _ := json.Marshal(v) // cursors are plain structs of strings and numbers
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return projections.ErrBadCursor
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return projections.ErrBadCursor
	}
	return nil
}

// cursorCmp returns a function comparing a device with the cursor's
// position in field order.
func cursorCmp(field string, c devCursor) (func(d *device) int, error) {
	var byField func(d *device) int
	switch field {
	case SortIP:
		var ip netip.Addr
		if c.K != "" {
			var err error
			if ip, err = netip.ParseAddr(c.K); err != nil {
				return nil, projections.ErrBadCursor
			}
		}
		byField = func(d *device) int { return d.current.Compare(ip) }
	case SortFirstSeen, SortLastSeen:
		t, err := time.Parse(time.RFC3339Nano, c.K)
		if err != nil {
			return nil, projections.ErrBadCursor
		}
		if field == SortFirstSeen {
			byField = func(d *device) int { return d.FirstSeen.Compare(t) }
		} else {
			byField = func(d *device) int { return d.LastSeen.Compare(t) }
		}
	default:
		byField = func(d *device) int { return strings.Compare(d.sortKey, c.K) }
	}
	return func(d *device) int {
		if r := byField(d); r != 0 {
			return r
		}
		return strings.Compare(d.ID, c.I)
	}, nil
}

// deviceQuery is a checked DeviceFilter.
type deviceQuery struct {
	field    string
	desc     bool
	sortSpec string // field with "-" when descending, as cursors store it
	limit    int
	atCursor func(d *device) int  // nil without a cursor
	text     []byte               // lower-case q, nil for none
	filter   func(d *device) bool // the other filters, nil for none
}

// newDeviceQuery checks f and compiles its filters.
func newDeviceQuery(f projections.DeviceFilter) (*deviceQuery, error) {
	field, desc, err := parseSort(f.Sort)
	if err != nil {
		return nil, err
	}
	switch f.Presence {
	case "", presenceOnline, presenceOffline, presenceQuiet:
	default:
		return nil, fmt.Errorf("inventory: presence %q: %w (want online, offline or quiet)", f.Presence, ErrBadFilter)
	}
	q := &deviceQuery{field: field, desc: desc, sortSpec: field, limit: clampLimit(f.Limit)}
	if desc {
		q.sortSpec = "-" + field
	}
	if f.Cursor != "" {
		var c devCursor
		if err := decodeCursor(f.Cursor, &c); err != nil || c.S != q.sortSpec {
			return nil, fmt.Errorf("inventory: list devices: %w", projections.ErrBadCursor)
		}
		if q.atCursor, err = cursorCmp(field, c); err != nil {
			return nil, fmt.Errorf("inventory: list devices: %w", err)
		}
	}
	if t := strings.ToLower(strings.TrimSpace(f.Q)); t != "" {
		q.text = []byte(t)
	}
	if f.Group == "" && f.Presence == "" && f.Watched == nil && f.Ignored == nil && f.Network == nil {
		return q, nil
	}
	q.filter = func(d *device) bool {
		if f.Group != "" && (d.Group == nil || *d.Group != f.Group) {
			return false
		}
		if f.Presence != "" && d.Presence != f.Presence {
			return false
		}
		if f.Watched != nil && d.Watched != *f.Watched {
			return false
		}
		if f.Ignored != nil && d.Ignored != *f.Ignored {
			return false
		}
		if f.Network != nil {
			for _, a := range d.Addrs {
				if a.RetiredAt == nil && f.Network.Contains(a.ip) {
					return true
				}
			}
			return false
		}
		return true
	}
	return q, nil
}

// pickDevices calls emit with each device of q's page in order and
// returns the next cursor (nil on the last page). The caller holds the
// read lock.
func (i *Inventory) pickDevices(ctx context.Context, q *deviceQuery, emit func(d *device) error) (*string, error) {
	if i.db == nil {
		return nil, fmt.Errorf("inventory: list devices: %w", ErrNotLoaded)
	}
	s := i.sortedBy(q.field)
	// A cursor narrows the range of the sorted order to visit.
	begin, end := 0, len(s)
	if q.atCursor != nil {
		if q.desc {
			end = sort.Search(len(s), func(k int) bool { return q.atCursor(s[k]) >= 0 })
		} else {
			begin = sort.Search(len(s), func(k int) bool { return q.atCursor(s[k]) > 0 })
		}
	}
	var (
		last *device // the last device of the page so far
		n    int     // devices on the page
		more bool    // a device matched after a full page
		err  error   // of emit
	)
	// take adds d to the page when it passes the filters; it returns
	// false once the page is full and one more device matched, or emit
	// failed.
	take := func(d *device) bool {
		if q.filter != nil && !q.filter(d) {
			return true
		}
		if n == q.limit {
			more = true
			return false
		}
		if err = emit(d); err != nil {
			return false
		}
		last, n = d, n+1
		return true
	}
	if q.text == nil {
		step, k := 1, begin
		if q.desc {
			step, k = -1, end-1
		}
		for n := 0; k >= begin && k < end; k, n = k+step, n+1 {
			if (n%1024 == 1023 && ctx.Err() != nil) || !take(s[k]) {
				break
			}
		}
	} else {
		// q= searches the haystack a chunk of devices at a time, from
		// the end of the range when descending.
		const chunk = searchChunk
		hay := i.haystackOf(q.field, s)
		anchor := hay.anchor(q.text)
		buf := make([]int, 0, 64)
		for lo, hi, going := begin, end, true; going && lo < hi && ctx.Err() == nil; {
			if q.desc {
				buf = hay.appendMatches(buf[:0], q.text, anchor, max(lo, hi-chunk), hi)
				hi = max(lo, hi-chunk)
				for j := len(buf) - 1; j >= 0 && going; j-- {
					going = take(s[buf[j]])
				}
			} else {
				buf = hay.appendMatches(buf[:0], q.text, anchor, lo, min(hi, lo+chunk))
				lo = min(hi, lo+chunk)
				for j := 0; j < len(buf) && going; j++ {
					going = take(s[buf[j]])
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var next *string
	if more {
		c := encodeCursor(devCursor{S: q.sortSpec, K: sortKeyString(last, q.field), I: last.ID})
		next = &c
	}
	return next, nil
}

// ListDevices returns one page of devices matching f, in f.Sort order
// (default name; ties by id; a leading "-" reverses the whole order).
// q matches a case-insensitive substring of any name, the label, any
// address (current or retired), the MAC or the vendor. network matches
// devices with a current address inside the prefix.
func (i *Inventory) ListDevices(ctx context.Context, f projections.DeviceFilter) (projections.Page[projections.Device], error) {
	page := projections.Page[projections.Device]{Items: []projections.Device{}}
	q, err := newDeviceQuery(f)
	if err != nil {
		return page, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	page.Items = make([]projections.Device, 0, min(q.limit, len(i.devs)))
	next, err := i.pickDevices(ctx, q, func(d *device) error {
		page.Items = append(page.Items, d.view())
		return nil
	})
	if err != nil {
		return projections.Page[projections.Device]{Items: []projections.Device{}}, err
	}
	page.NextCursor = next
	return page, nil
}

// Device returns one device, or an error wrapping projections.ErrNotFound.
func (i *Inventory) Device(ctx context.Context, id string) (projections.Device, error) {
	if err := ctx.Err(); err != nil {
		return projections.Device{}, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	d, err := i.lookupView(id) // a merged device is a *MergedError
	if err != nil {
		return projections.Device{}, err
	}
	return d.view(), nil
}

// WatchState returns whether a device is watched and its presence, or an
// error wrapping projections.ErrNotFound.
func (i *Inventory) WatchState(id string) (projections.WatchState, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	d, err := i.lookupView(id) // a merged device is a *MergedError
	if err != nil {
		return projections.WatchState{}, err
	}
	return projections.WatchState{Watched: d.Watched, Presence: d.Presence}, nil
}

// Groups returns the groups in use with their device counts, by name.
func (i *Inventory) Groups(ctx context.Context) ([]projections.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	i.idxMu.Lock()
	defer i.idxMu.Unlock()
	c := i.cache()
	if c.groups == nil {
		counts := map[string]int{}
		for _, d := range i.viewDevices() {
			if d.Group != nil {
				counts[*d.Group]++
			}
		}
		c.groups = make([]projections.Group, 0, len(counts))
		for _, g := range sortedKeys(counts) {
			c.groups = append(c.groups, projections.Group{Name: g, Devices: counts[g]})
		}
	}
	return slices.Clone(c.groups), nil
}

// Stats returns counts across the inventory: by presence (every state,
// zeros included), by group (grouped devices), by network (a device
// counts once in each network of its current addresses), by source, the
// watched and ignored counts, and the newest device (latest first
// sighting, then greatest id).
func (i *Inventory) Stats(ctx context.Context) (projections.Stats, error) {
	if err := ctx.Err(); err != nil {
		return projections.Stats{}, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	i.idxMu.Lock()
	defer i.idxMu.Unlock()
	c := i.cache()
	if c.stats == nil {
		view := i.viewDevices() // merged devices count once
		st := &projections.Stats{
			Devices:    len(view),
			ByPresence: map[string]int{presenceOnline: 0, presenceOffline: 0, presenceQuiet: 0},
			ByGroup:    map[string]int{},
			ByNetwork:  map[string]int{},
			BySource:   map[string]int{},
		}
		var newest *device
		for _, d := range view {
			st.ByPresence[d.Presence]++
			if d.Group != nil {
				st.ByGroup[*d.Group]++
			}
			var nets []string
			for _, a := range d.Addrs {
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
			if newest == nil || d.FirstSeen.After(newest.FirstSeen) ||
				(d.FirstSeen.Equal(newest.FirstSeen) && d.ID > newest.ID) {
				newest = d
			}
		}
		c.stats, c.newest = st, newest
	}
	out := *c.stats
	out.ByPresence = maps.Clone(c.stats.ByPresence)
	out.ByGroup = maps.Clone(c.stats.ByGroup)
	out.ByNetwork = maps.Clone(c.stats.ByNetwork)
	out.BySource = maps.Clone(c.stats.BySource)
	if c.newest != nil {
		v := c.newest.view()
		out.NewestDevice = &v
	}
	return out, nil
}
