package traffic

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Name is the projection's consumer name. Never rename it.
const Name = "traffic"

// Version of the rows and rules; raising it rebuilds from the log.
const Version = 1

// Buckets.
const (
	BucketHours   = "traffic.hours"
	BucketSources = "traffic.sources"
)

var (
	bHours   = []byte(BucketHours)
	bSources = []byte(BucketSources)
)

// Row keys: hour (8, unix seconds) | local (16) | peer (16) | direction
// (1: 0 out, 1 in) | protocol (1) | port (2). Values: bytes, packets,
// flows (8 each) | peer country (2 bytes, zero when none).
const (
	keyLen = 8 + 16 + 16 + 1 + 1 + 2
	valLen = 8 + 8 + 8 + 2
)

// Addresses is what the projection reads of the inventory: which device
// held an address when (projections/inventory's Holdings).
type Addresses interface {
	HoldingsVersion() uint64
	Holdings() []inventory.Holding
	DeviceHoldings(id string) ([]inventory.Holding, error)
}

// Options configures a Projection.
type Options struct {
	// Addresses attributes rows to devices (the inventory). Required.
	Addresses Addresses
	// Countries gives peers their country; nil: none.
	Countries *Countries
	// Home is location.country, what the map draws from.
	Home string
	// PeerName names a peer as a DNS answer recorded for the device did
	// (the DNS plugins' hook); nil: peers have no names.
	PeerName func(deviceID string, peer netip.Addr, at time.Time) string
	// Registry decodes payloads. Default events.Default.
	Registry *events.Registry
}

// Gap is a flow window a crash lost: the listener's previous run ended
// after Last without a final window, and the next run started at Next.
type Gap struct {
	Source string    `json:"source"`
	Last   time.Time `json:"last"`
	Next   time.Time `json:"next"`
}

// sourceRec is the stored state of one listener (BucketSources).
type sourceRec struct {
	Finished time.Time `json:"finished"`
	Final    bool      `json:"final"`
	Gaps     []Gap     `json:"gaps,omitempty"`
}

// maxGaps bounds the gaps kept per listener.
const maxGaps = 16

// Projection is the traffic read model: hourly totals per local address,
// peer, direction and protocol/port, with the peer's country. Rows are
// keyed by address, not by device: the device holding the local address
// at that hour is found at query time from the inventory's address
// history, so a device learnt after its traffic still gets it and a
// replay gives the same rows. It is safe for concurrent use.
type Projection struct {
	opts Options
	reg  *events.Registry

	mu      sync.RWMutex
	db      *bolt.DB
	sources map[string]*sourceRec

	idxMu  sync.Mutex
	idx    *inventory.HoldingIndex
	idxVer uint64
}

// New returns a projection; it serves once the runner has called Load.
func New(opts Options) (*Projection, error) {
	if opts.Addresses == nil {
		return nil, fmt.Errorf("traffic: Options.Addresses is required")
	}
	if opts.Registry == nil {
		opts.Registry = events.Default
	}
	return &Projection{opts: opts, reg: opts.Registry, sources: map[string]*sourceRec{}}, nil
}

// Name implements runner.Projection.
func (p *Projection) Name() string { return Name }

// Version implements runner.Projection.
func (p *Projection) Version() int { return Version }

// Buckets implements runner.Projection.
func (p *Projection) Buckets() []string { return []string{BucketHours, BucketSources} }

// Load implements runner.Projection.
func (p *Projection) Load(tx *bolt.Tx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.db = tx.DB()
	p.sources = map[string]*sourceRec{}
	if b := tx.Bucket(bSources); b != nil {
		return b.ForEach(func(k, v []byte) error {
			r := &sourceRec{}
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("traffic: load source %q: %w", k, err)
			}
			p.sources[string(k)] = r
			return nil
		})
	}
	return nil
}

// Apply implements runner.Projection: traffic.recorded adds its rows to
// the hour of the window's end, twice (once from each end's side);
// retention.purged drops the hours before its traffic cutoff.
func (p *Projection) Apply(tx *bolt.Tx, ev events.Envelope) error {
	switch ev.Kind {
	case events.KindTrafficRecorded:
		var w events.TrafficRecorded
		if err := p.reg.DecodeInto(ev, &w); err != nil {
			return fmt.Errorf("traffic: %w", err)
		}
		if err := p.source(tx, ev.Source, &w); err != nil {
			return err
		}
		return p.rows(tx, ev.Time, &w)
	case events.KindRetentionPurged:
		var r events.RetentionPurged
		if err := p.reg.DecodeInto(ev, &r); err != nil {
			return fmt.Errorf("traffic: %w", err)
		}
		if r.TrafficBefore != nil {
			return purge(tx, *r.TrafficBefore)
		}
	}
	return nil
}

// source records the listener's window for gap detection.
func (p *Projection) source(tx *bolt.Tx, src string, w *events.TrafficRecorded) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.sources[src]
	if r == nil {
		r = &sourceRec{}
	}
	nr := &sourceRec{Finished: w.Finished, Final: w.Final, Gaps: r.Gaps}
	if w.First && !r.Finished.IsZero() && !r.Final {
		nr.Gaps = append(slices.Clone(r.Gaps), Gap{Source: src, Last: r.Finished, Next: w.Started})
		if len(nr.Gaps) > maxGaps {
			nr.Gaps = nr.Gaps[len(nr.Gaps)-maxGaps:]
		}
	}
	b, err := json.Marshal(nr)
	if err != nil {
		return fmt.Errorf("traffic: %w", err)
	}
	if err := tx.Bucket(bSources).Put([]byte(src), b); err != nil {
		return fmt.Errorf("traffic: source %s: %w", src, err)
	}
	p.sources[src] = nr
	return nil
}

// Gaps lists the windows crashes lost, oldest first per listener (the
// service logs them at start).
func (p *Projection) Gaps() []Gap {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Gap
	for _, r := range p.sources {
		out = append(out, r.Gaps...)
	}
	slices.SortFunc(out, func(a, b Gap) int { return a.Next.Compare(b.Next) })
	return out
}

func putAddr(b []byte, a netip.Addr) { v := a.Unmap().As16(); copy(b, v[:]) }

func getAddr(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b)).Unmap() }

type val struct{ bytes, packets, flows uint64 }

func (p *Projection) rows(tx *bolt.Tx, at time.Time, w *events.TrafficRecorded) error {
	hour := at.UTC().Truncate(time.Hour)
	bk := tx.Bucket(bHours)
	// Both sides of every row, summed by key, then written in key order:
	// bbolt splits pages at commit, and puts in random order inside one
	// transaction cost about the square of their number (a window of
	// 100,000 rows took 23 s), in order far less.
	type add struct {
		key                 [keyLen]byte
		octets, pkts, flows uint64
	}
	adds := make([]add, 0, 2*len(w.Rows))
	var k [keyLen]byte
	binary.BigEndian.PutUint64(k[:8], uint64(hour.Unix()))
	for _, r := range w.Rows {
		src, err1 := netip.ParseAddr(r.Src)
		dst, err2 := netip.ParseAddr(r.Dst)
		if err1 != nil || err2 != nil {
			continue // not written by this build's ingest
		}
		for dir := byte(0); dir < 2; dir++ {
			local, peer := src, dst
			if dir == 1 {
				local, peer = dst, src
			}
			putAddr(k[8:24], local)
			putAddr(k[24:40], peer)
			k[40], k[41] = dir, r.Proto
			binary.BigEndian.PutUint16(k[42:], r.Port)
			adds = append(adds, add{key: k, octets: r.Bytes, pkts: r.Packets, flows: r.Flows})
		}
	}
	slices.SortFunc(adds, func(a, b add) int { return bytes.Compare(a.key[:], b.key[:]) })
	var v [valLen]byte
	for i := 0; i < len(adds); {
		a := adds[i]
		for i++; i < len(adds) && adds[i].key == a.key; i++ {
			a.octets += adds[i].octets
			a.pkts += adds[i].pkts
			a.flows += adds[i].flows
		}
		var old val
		var country [2]byte
		if cur := bk.Get(a.key[:]); len(cur) == valLen {
			old = decodeVal(cur)
			copy(country[:], cur[24:26])
		} else {
			copy(country[:], p.opts.Countries.Country(getAddr(a.key[24:40])))
		}
		binary.BigEndian.PutUint64(v[0:], old.bytes+a.octets)
		binary.BigEndian.PutUint64(v[8:], old.packets+a.pkts)
		binary.BigEndian.PutUint64(v[16:], old.flows+a.flows)
		copy(v[24:], country[:])
		// bbolt keeps the key and value until the commit: fresh copies.
		kv := make([]byte, keyLen+valLen)
		copy(kv, a.key[:])
		copy(kv[keyLen:], v[:])
		if err := bk.Put(kv[:keyLen:keyLen], kv[keyLen:]); err != nil {
			return fmt.Errorf("traffic: put row: %w", err)
		}
	}
	return nil
}

func decodeVal(b []byte) val {
	return val{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])}
}

func countryOf(b []byte) string {
	if len(b) < valLen || b[24] == 0 {
		return ""
	}
	return string(b[24:26])
}

// purge deletes every hour before cutoff.
func purge(tx *bolt.Tx, cutoff time.Time) error {
	c := tx.Bucket(bHours).Cursor()
	end := uint64(cutoff.Unix())
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < end; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("traffic: purge: %w", err)
		}
	}
	return nil
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

// Limits of lists.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ErrBadBy is returned for an unknown by=.
var ErrBadBy = fmt.Errorf("by must be %s, %s or %s", ByPeer, ByCountry, ByHour)

func (p *Projection) view(fn func(*bolt.Tx) error) error {
	p.mu.RLock()
	db := p.db
	p.mu.RUnlock()
	if db == nil {
		return nil // not loaded yet: nothing recorded
	}
	return db.View(fn)
}

// DeviceTraffic totals a device's traffic over the hours starting in
// [f.Since, f.Until), by peer, country or hour. It returns
// projections.ErrNotFound for an unknown device, ErrBadBy and
// projections.ErrBadCursor for bad parameters.
func (p *Projection) DeviceTraffic(ctx context.Context, id string, f Filter) (projections.Page[Item], error) {
	var page projections.Page[Item]
	by := f.By
	if by == "" {
		by = ByPeer
	}
	if by != ByPeer && by != ByCountry && by != ByHour {
		return page, ErrBadBy
	}
	off, err := decodeCursor(f.Cursor, by)
	if err != nil {
		return page, err
	}
	hs, err := p.opts.Addresses.DeviceHoldings(id)
	if err != nil {
		return page, err
	}
	idx := p.index()
	items := map[string]*Item{}
	ips := map[netip.Addr]bool{}
	for _, h := range hs {
		ips[h.IP] = true
	}
	from, until := f.Since.UTC().Truncate(time.Hour), f.Until.UTC()
	err = p.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bHours).Cursor()
		var prefix [24]byte
		for hour := from; hour.Before(until); hour = hour.Add(time.Hour) {
			if err := ctx.Err(); err != nil {
				return err
			}
			binary.BigEndian.PutUint64(prefix[:8], uint64(hour.Unix()))
			for ip := range ips {
				if dev, ok := idx.At(ip, hour); !ok || dev != id {
					continue
				}
				putAddr(prefix[8:], ip)
				for k, v := c.Seek(prefix[:]); k != nil && string(k[:24]) == string(prefix[:]); k, v = c.Next() {
					peer := getAddr(k[24:40])
					var key string
					it := &Item{}
					switch by {
					case ByPeer:
						key = peer.String()
					case ByCountry:
						key = countryOf(v)
					case ByHour:
						key = hour.Format(time.RFC3339)
					}
					if cur := items[key]; cur != nil {
						it = cur
					} else {
						it.Key = key
						switch by {
						case ByPeer:
							it.Peer, it.Country = key, countryOf(v)
							it.peer, it.hour = peer, hour
						case ByCountry:
							it.Country = key
						case ByHour:
							h := hour
							it.Hour = &h
						}
						items[key] = it
					}
					it.Totals.add(k[40] == 1, decodeVal(v))
				}
			}
		}
		return nil
	})
	if err != nil {
		return page, err
	}
	// Names come after the read transaction: the DNS projection opens its
	// own on the same file, and a read transaction opened inside another
	// can wait forever behind a commit that grows the file.
	if by == ByPeer && p.opts.PeerName != nil {
		for _, it := range items {
			it.Name = p.opts.PeerName(id, it.peer, it.hour)
		}
	}
	list := make([]Item, 0, len(items))
	q := strings.ToLower(f.Q)
	for _, it := range items {
		if q != "" && !strings.Contains(strings.ToLower(it.Key+"\x00"+it.Name+"\x00"+it.Country), q) {
			continue
		}
		list = append(list, *it)
	}
	slices.SortFunc(list, func(a, b Item) int {
		if by == ByHour {
			return cmp.Compare(a.Key, b.Key)
		}
		if c := cmp.Compare(b.bytes(), a.bytes()); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	limit := clampLimit(f.Limit)
	if off > len(list) {
		off = len(list)
	}
	end := min(off+limit, len(list))
	page.Items = list[off:end]
	if end < len(list) {
		c := encodeCursor(end, by)
		page.NextCursor = &c
	}
	return page, nil
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

func encodeCursor(off int, by string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(by + ":" + strconv.Itoa(off)))
}

func decodeCursor(s, by string) (int, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, projections.ErrBadCursor
	}
	rest, ok := cutPrefix(string(b), by+":")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 {
		return 0, projections.ErrBadCursor
	}
	return n, nil
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// Overview totals every device's traffic over the hours starting in
// [since, until): the top limit devices, countries and peers by bytes.
// Rows whose local address no device held are not counted.
func (p *Projection) Overview(ctx context.Context, since, until time.Time, limit int) (Overview, error) {
	out := Overview{Since: since.UTC(), Until: until.UTC(), Home: p.opts.Home}
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, MaxLimit)
	idx := p.index()
	devs := map[string]*Totals{}
	countries := map[string]*Totals{}
	type peerAcc struct {
		country string
		t       Totals
	}
	peers := map[netip.Addr]*peerAcc{}
	type hk struct {
		hour int64
		ip   netip.Addr
	}
	holder := map[hk]string{}
	err := p.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bHours).Cursor()
		var start [8]byte
		binary.BigEndian.PutUint64(start[:], uint64(since.UTC().Truncate(time.Hour).Unix()))
		end := uint64(until.Unix())
		n := 0
		for k, v := c.Seek(start[:]); k != nil && binary.BigEndian.Uint64(k) < end; k, v = c.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			h := int64(binary.BigEndian.Uint64(k))
			local := getAddr(k[8:24])
			key := hk{h, local}
			dev, seen := holder[key]
			if !seen {
				dev, _ = idx.At(local, time.Unix(h, 0).UTC())
				holder[key] = dev
			}
			if dev == "" {
				continue
			}
			in, vv, country := k[40] == 1, decodeVal(v), countryOf(v)
			out.Total.add(in, vv)
			acc(devs, dev).add(in, vv)
			acc(countries, country).add(in, vv)
			peer := getAddr(k[24:40])
			pa := peers[peer]
			if pa == nil {
				pa = &peerAcc{country: country}
				peers[peer] = pa
			}
			pa.t.add(in, vv)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	for id, t := range devs {
		out.Devices = append(out.Devices, DeviceTotal{DeviceID: id, Totals: *t})
	}
	for c, t := range countries {
		out.Countries = append(out.Countries, CountryTotal{Country: c, Totals: *t})
	}
	for a, pa := range peers {
		out.Peers = append(out.Peers, PeerTotal{Peer: a.String(), Country: pa.country, Totals: pa.t})
	}
	out.Devices = top(out.Devices, limit, func(d DeviceTotal) (uint64, string) { return d.bytes(), d.DeviceID })
	out.Countries = top(out.Countries, limit, func(d CountryTotal) (uint64, string) { return d.bytes(), d.Country })
	out.Peers = top(out.Peers, limit, func(d PeerTotal) (uint64, string) { return d.bytes(), d.Peer })
	return out, nil
}

func acc(m map[string]*Totals, k string) *Totals {
	t := m[k]
	if t == nil {
		t = &Totals{}
		m[k] = t
	}
	return t
}

func top[T any](l []T, n int, key func(T) (uint64, string)) []T {
	slices.SortFunc(l, func(a, b T) int {
		ab, ak := key(a)
		bb, bk := key(b)
		if c := cmp.Compare(bb, ab); c != 0 {
			return c
		}
		return cmp.Compare(ak, bk)
	})
	if l == nil {
		l = []T{}
	}
	return l[:min(n, len(l))]
}
