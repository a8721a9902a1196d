package dns

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Limits of lists.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Item is one row of GET /api/devices/{id}/dns: a device's lookups of one
// domain within one hour, summed over its addresses and over the servers
// that answered it.
type Item struct {
	Hour   time.Time `json:"hour"`
	Domain string    `json:"domain"`
	Count  uint64    `json:"count"`
	// Blocked is how many of them the servers said they blocked.
	Blocked uint64 `json:"blocked"`
	// Answers are the addresses the answers for the domain held in that
	// hour (whoever asked), sorted.
	Answers []string `json:"answers"`
}

// Filter selects a device's lookups.
type Filter struct {
	// Since and Until: hours that start in [Since, Until).
	Since, Until time.Time
	// Q keeps domains that contain it (case-insensitive).
	Q      string
	Limit  int
	Cursor string
}

// Cursor returns the restart point recorded for a source by its last
// dns.read (sources.Env.Cursor), "" when it has none.
func (p *Projection) Cursor(ctx context.Context, source string) (string, error) {
	var out string
	err := p.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bSources).Get([]byte(source))
		if v == nil {
			return nil
		}
		var r sourceRec
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("dns: source %s: %w", source, err)
		}
		out = r.Cursor
		return nil
	})
	return out, err
}

func (p *Projection) view(fn func(*bolt.Tx) error) error {
	p.mu.RLock()
	db := p.db
	p.mu.RUnlock()
	if db == nil {
		return nil // not loaded yet: nothing recorded
	}
	return db.View(fn)
}

// index returns the address history, rebuilt when the inventory changed.
func (p *Projection) index() *inventory.HoldingIndex {
	p.idxMu.Lock()
	defer p.idxMu.Unlock()
	v := p.opts.Addresses.HoldingsVersion()
	if p.idx == nil || v != p.idxVer {
		p.idx, p.idxVer = inventory.NewHoldingIndex(p.opts.Addresses.Holdings()), v
	}
	return p.idx
}

// DeviceLookups lists a device's lookups in the hours starting in
// [f.Since, f.Until), newest hour first and by domain within an hour.
// Each row counts for the device that held its client address during
// that hour (inventory.HoldingIndex), so lookups recorded before the
// device was known attach to it once it is. It returns
// projections.ErrNotFound for an unknown device and
// projections.ErrBadCursor for a cursor it did not issue.
func (p *Projection) DeviceLookups(ctx context.Context, id string, f Filter) (projections.Page[Item], error) {
	var page projections.Page[Item]
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return page, err
	}
	clients, own, err := p.deviceClients(id)
	if err != nil {
		return page, err
	}
	limit := clampLimit(f.Limit)
	first, end, ok := hourSpan(f.Since, f.Until)
	if len(clients) == 0 || !ok {
		page.Items = []Item{}
		return page, nil
	}
	if after != nil {
		end = min(end, after.hour+1)
	}
	idx := p.index()
	// The domains q keeps, found once (ids are dense, from 1).
	var keep []bool
	p.mu.RLock()
	names := p.domains[:len(p.domains):len(p.domains)] // ids never change; appends go past it
	p.mu.RUnlock()
	if q := strings.ToLower(f.Q); q != "" {
		keep = make([]bool, len(names)+1)
		for k, n := range names {
			keep[k+1] = strings.Contains(n, q)
		}
	}
	items := make([]Item, 0, min(limit+1, 256))
	err = p.view(func(tx *bolt.Tx) error {
		hb, ab := tx.Bucket(bHours), tx.Bucket(bAnswers)
		var key [8]byte
		var sum []lookup // this hour's, by domain id
		for h := end; h > first; {
			h--
			if err := ctx.Err(); err != nil {
				return err
			}
			at := time.Unix(int64(h)*3600, 0).UTC()
			var err error
			if sum, err = hourLookups(hb, h, own, clients, idx, len(names), sum); err != nil {
				return err
			}
			if keep != nil || after != nil && h == after.hour {
				sum = slices.DeleteFunc(sum, func(l lookup) bool {
					return keep != nil && !keep[l.domain] || after != nil && h == after.hour && names[l.domain-1] <= after.domain
				})
			}
			if len(sum) == 0 {
				continue
			}
			slices.SortFunc(sum, func(a, b lookup) int { return strings.Compare(names[a.domain-1], names[b.domain-1]) })
			binary.BigEndian.PutUint32(key[:], h)
			for _, l := range sum {
				binary.BigEndian.PutUint32(key[4:], l.domain)
				items = append(items, Item{Hour: at, Domain: names[l.domain-1], Count: l.count, Blocked: l.blocked, Answers: answerStrings(ab.Get(key[:]))})
				if len(items) > limit {
					return nil
				}
			}
		}
		return nil
	})
	if err != nil {
		return page, err
	}
	if len(items) > limit {
		last := items[limit-1]
		c := encodeCursor(cursorPos{hour: uint32(last.Hour.Unix() / 3600), domain: last.Domain})
		page.NextCursor = &c
		items = items[:limit]
	}
	page.Items = items
	return page, nil
}

// HourTotal is a device's lookups of one hour, summed over its domains
// (and its addresses, as DeviceLookups sums them): one row of its
// timeline.
type HourTotal struct {
	Hour time.Time `json:"hour"`
	// Lookups and Blocked are the hour's totals.
	Lookups uint64 `json:"lookups"`
	Blocked uint64 `json:"blocked"`
	// Domains is how many distinct domains it looked up.
	Domains int `json:"domains"`
	// Top are its most looked-up domains, most first, ties by name.
	Top []DomainTotal `json:"top"`
}

// Limits of HourTotal.Top.
const (
	DefaultTop = 3
	MaxTop     = 100
)

// HourFilter selects a device's hours.
type HourFilter struct {
	// Since and Until: the hours DeviceLookups reads for them.
	Since, Until time.Time
	// Top is how many of each hour's busiest domains to keep: DefaultTop
	// when 0 or less, at most MaxTop.
	Top    int
	Limit  int
	Cursor string
}

// DeviceHours is DeviceLookups summed per hour: one item per hour with
// lookups, newest first, paged by hour (Limit hours a page). It reads
// each hour's rows once and never lists its domains, so a timeline can
// show every hour of a long range. It returns projections.ErrNotFound
// for an unknown device and projections.ErrBadCursor for a cursor it did
// not issue (a DeviceLookups cursor included).
func (p *Projection) DeviceHours(ctx context.Context, id string, f HourFilter) (projections.Page[HourTotal], error) {
	page := projections.Page[HourTotal]{Items: []HourTotal{}}
	after, err := decodeHourCursor(f.Cursor)
	if err != nil {
		return projections.Page[HourTotal]{}, err
	}
	clients, own, err := p.deviceClients(id)
	if err != nil {
		return projections.Page[HourTotal]{}, err
	}
	limit := clampLimit(f.Limit)
	top := f.Top
	switch {
	case top <= 0:
		top = DefaultTop
	case top > MaxTop:
		top = MaxTop
	}
	first, end, ok := hourSpan(f.Since, f.Until)
	if len(clients) == 0 || !ok {
		return page, nil
	}
	if after != nil {
		end = min(end, *after)
	}
	idx := p.index()
	p.mu.RLock()
	names := p.domains[:len(p.domains):len(p.domains)]
	p.mu.RUnlock()
	items := make([]HourTotal, 0, min(limit+1, 256))
	err = p.view(func(tx *bolt.Tx) error {
		hb := tx.Bucket(bHours)
		var sum []lookup
		for h := end; h > first && len(items) <= limit; {
			h--
			if err := ctx.Err(); err != nil {
				return err
			}
			var err error
			if sum, err = hourLookups(hb, h, own, clients, idx, len(names), sum); err != nil {
				return err
			}
			if len(sum) == 0 {
				continue
			}
			ht := HourTotal{Hour: time.Unix(int64(h)*3600, 0).UTC(), Domains: len(sum), Top: topDomains(sum, names, top)}
			for _, l := range sum {
				ht.Lookups += l.count
				ht.Blocked += l.blocked
			}
			items = append(items, ht)
		}
		return nil
	})
	if err != nil {
		return projections.Page[HourTotal]{}, err
	}
	if len(items) > limit {
		items = items[:limit]
		c := encodeHourCursor(uint32(items[limit-1].Hour.Unix() / 3600))
		page.NextCursor = &c
	}
	page.Items = items
	return page, nil
}

// client is one of a device's addresses that has lookups, and its id.
type client struct {
	ip netip.Addr
	id uint32
}

// deviceClients returns the device's addresses that have client ids:
// projections.ErrNotFound for an unknown device.
func (p *Projection) deviceClients(id string) ([]client, map[string]bool, error) {
	hs, err := p.opts.Addresses.DeviceHoldings(id)
	if err != nil {
		return nil, nil, err
	}
	var clients []client
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, h := range hs {
		if cid, ok := p.clientIDs[h.IP.Unmap()]; ok && !slices.ContainsFunc(clients, func(c client) bool { return c.id == cid }) {
			clients = append(clients, client{h.IP.Unmap(), cid})
		}
	}
	return clients, inventory.HoldingOwners(id, hs), nil
}

// hourSpan returns the hours [first, end) of a range: from the one
// holding since to the last one starting before until, as the traffic
// endpoints count them; ok is false for an empty range.
func hourSpan(since, until time.Time) (first, end uint32, ok bool) {
	first, _ = hourOf(max(since.UTC().Unix(), 0))
	end, ok = hourOf(until.UTC().Unix() + 3599)
	return first, end, ok && end > first
}

// hourLookups puts into sum (emptied first) the device's lookups of hour
// h, by domain id: those of each of its addresses that it held then,
// added up per domain. Domain ids past nNames (newer than the caller's
// view of the dictionary) are left out.
func hourLookups(hb *bolt.Bucket, h uint32, own map[string]bool, clients []client, idx *inventory.HoldingIndex, nNames int, sum []lookup) ([]lookup, error) {
	at := time.Unix(int64(h)*3600, 0).UTC()
	sum = sum[:0]
	var key [8]byte
	binary.BigEndian.PutUint32(key[:], h)
	merge := false // a second address of the device in this hour (few: merged in place)
	for _, c := range clients {
		if dev, ok := idx.At(c.ip, at); !ok || !own[dev] {
			continue
		}
		binary.BigEndian.PutUint32(key[4:], c.id)
		err := eachLookup(hb.Get(key[:]), func(l lookup) {
			if int(l.domain) > nNames {
				return
			}
			if !merge {
				sum = append(sum, l) // in domain id order
				return
			}
			sum = addLookup(sum, l)
		})
		if err != nil {
			return sum, fmt.Errorf("dns: hour %d client %d: %w", h, c.id, err)
		}
		merge = true
	}
	return sum, nil
}

// topDomains returns the n most looked-up domains of sum, most first,
// ties by name.
func topDomains(sum []lookup, names []string, n int) []DomainTotal {
	ahead := func(a, b lookup) bool { // a ranks before b
		if a.count != b.count {
			return a.count > b.count
		}
		return names[a.domain-1] < names[b.domain-1]
	}
	best := make([]lookup, 0, min(n, len(sum)))
	for _, l := range sum {
		if len(best) == n && !ahead(l, best[n-1]) {
			continue
		}
		k := 0
		for k < len(best) && !ahead(l, best[k]) {
			k++
		}
		if len(best) == n {
			best = best[:n-1]
		}
		best = slices.Insert(best, k, l)
	}
	out := make([]DomainTotal, len(best))
	for k, l := range best {
		out[k] = DomainTotal{Domain: names[l.domain-1], Count: l.count, Blocked: l.blocked}
	}
	return out
}

func answerStrings(b []byte) []string {
	as := decodeAddrs(b)
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// cursorPos is the last item of a page: the next page starts after it.
type cursorPos struct {
	hour   uint32
	domain string
}

func encodeCursor(c cursorPos) string {
	return base64.RawURLEncoding.EncodeToString([]byte("dns:" + strconv.FormatUint(uint64(c.hour), 10) + ":" + c.domain))
}

func decodeCursor(s string) (*cursorPos, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, projections.ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(b), "dns:")
	if !ok {
		return nil, projections.ErrBadCursor
	}
	hs, domain, ok := strings.Cut(rest, ":")
	h, err := strconv.ParseUint(hs, 10, 32)
	if !ok || err != nil || domain == "" {
		return nil, projections.ErrBadCursor
	}
	return &cursorPos{hour: uint32(h), domain: domain}, nil
}

// encodeHourCursor is DeviceHours' cursor: the last hour of a page.
func encodeHourCursor(h uint32) string {
	return base64.RawURLEncoding.EncodeToString([]byte("dnsh:" + strconv.FormatUint(uint64(h), 10)))
}

func decodeHourCursor(s string) (*uint32, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, projections.ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(b), "dnsh:")
	h, err := strconv.ParseUint(rest, 10, 32)
	if !ok || err != nil {
		return nil, projections.ErrBadCursor
	}
	h32 := uint32(h)
	return &h32, nil
}

// PeerName names an address by the domain whose answer held it in the
// hour of at, or the hour before (the traffic projection's hook,
// Options.PeerName there); "" when none did. A domain the device itself
// looked up in either hour (from an address it held then) wins; else any
// client's, the nearer hour first (a DNS server behind a forwarding
// router sees the router ask for everyone, and a CDN address answers for
// many names, so the device's own lookup is the better name when there
// is one).
func (p *Projection) PeerName(deviceID string, peer netip.Addr, at time.Time) string {
	h, ok := hourOf(at.UTC().Unix())
	if !ok {
		return ""
	}
	peer = peer.Unmap()
	clients, own, _ := p.deviceClients(deviceID) // none: any client's answer
	idx := p.index()
	var mineName, anyName uint32
	var mine []lookup
	_ = p.view(func(tx *bolt.Tx) error {
		ab, hb := tx.Bucket(bAnswers), tx.Bucket(bHours)
		for _, hh := range []uint32{h, h - 1} {
			// The domains the device looked up in hour hh (from the
			// addresses it held then), in domain id order.
			// A row that does not decode is skipped (a name is a hint):
			// the lookups read before it still count.
			mine, _ = hourLookups(hb, hh, own, clients, idx, math.MaxInt, mine)
			c := ab.Cursor()
			var pre [4]byte
			binary.BigEndian.PutUint32(pre[:], hh)
			for k, v := c.Seek(pre[:]); k != nil && binary.BigEndian.Uint32(k) == hh; k, v = c.Next() {
				if !slices.Contains(decodeAddrs(v), peer) {
					continue
				}
				d := binary.BigEndian.Uint32(k[4:])
				if _, found := slices.BinarySearchFunc(mine, d, func(l lookup, d uint32) int { return cmpU32(l.domain, d) }); found {
					mineName = d
					return nil
				}
				if anyName == 0 {
					anyName = d
				}
			}
		}
		return nil
	})
	d := cmp.Or(mineName, anyName)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if d >= 1 && int(d) <= len(p.domains) {
		return p.domains[d-1]
	}
	return ""
}
