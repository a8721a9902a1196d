package dns

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
)

// Name is the projection's consumer name. Never rename it.
const Name = "dns"

// Version of the rows and rules; raising it rebuilds from the log.
const Version = 1

// Buckets.
const (
	// BucketHours: hour (4, hours since the Unix epoch) | client id (4)
	// → that client's lookups of the hour: per domain, sorted by domain
	// id, uvarint(domain id − previous id), uvarint(count),
	// uvarint(blocked).
	BucketHours = "dns.hours"
	// BucketAnswers: hour (4) | domain id (4) → the distinct answer
	// addresses of the domain in that hour, each a length byte (4 or 16)
	// and the address.
	BucketAnswers = "dns.answers"
	// BucketDomains: domain id (4) → domain name.
	BucketDomains = "dns.domains"
	// BucketClients: client id (4) → address (4 or 16 bytes).
	BucketClients = "dns.clients"
	// BucketSources: source name → its state (JSON of sourceRec).
	BucketSources = "dns.sources"
)

var (
	bHours   = []byte(BucketHours)
	bAnswers = []byte(BucketAnswers)
	bDomains = []byte(BucketDomains)
	bClients = []byte(BucketClients)
	bSources = []byte(BucketSources)
)

// MaxAnswers bounds the answer addresses kept per domain and hour.
const MaxAnswers = 16

// hourFillPercent packs the pages of the hour-major buckets: rows are
// written at the end (the current hour), so pages are filled nearly full.
const hourFillPercent = 0.9

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
	// Registry decodes payloads. Default events.Default.
	Registry *events.Registry
}

// sourceRec is the stored state of one DNS source.
type sourceRec struct {
	Kind     string    `json:"kind"`
	Cursor   string    `json:"cursor"`
	Seq      uint64    `json:"seq"`
	Finished time.Time `json:"finished"`
}

// Projection is the DNS read model: hourly lookup counts per client
// address and domain, and the addresses in the answers, from dns.read
// events; attributed to devices at query time. It is safe for concurrent
// use: Apply and Load run on the runner's goroutine and take the write
// lock for the dictionaries; queries read committed rows in their own
// read transactions.
type Projection struct {
	opts Options
	reg  *events.Registry

	mu        sync.RWMutex
	db        *bolt.DB
	domains   []string          // by id−1
	domainIDs map[string]uint32 // by name
	clients   []netip.Addr      // by id−1
	clientIDs map[netip.Addr]uint32

	idxMu  sync.Mutex
	idx    *inventory.HoldingIndex
	idxVer uint64
}

// New returns a projection; it serves once the runner has called Load.
func New(opts Options) (*Projection, error) {
	if opts.Addresses == nil {
		return nil, errors.New("dns: Options.Addresses is required")
	}
	if opts.Registry == nil {
		opts.Registry = events.Default
	}
	p := &Projection{opts: opts, reg: opts.Registry}
	p.reset()
	return p, nil
}

func (p *Projection) reset() {
	p.domains, p.domainIDs = nil, map[string]uint32{}
	p.clients, p.clientIDs = nil, map[netip.Addr]uint32{}
}

// Name implements runner.Projection.
func (p *Projection) Name() string { return Name }

// Version implements runner.Projection.
func (p *Projection) Version() int { return Version }

// Buckets implements runner.Projection.
func (p *Projection) Buckets() []string {
	return []string{BucketHours, BucketAnswers, BucketDomains, BucketClients, BucketSources}
}

// Load implements runner.Projection: the dictionaries come back into
// memory.
func (p *Projection) Load(tx *bolt.Tx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reset()
	p.db = tx.DB()
	if b := tx.Bucket(bDomains); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			if len(k) != 4 || binary.BigEndian.Uint32(k) != uint32(len(p.domains)+1) {
				return fmt.Errorf("dns: load: domain key %x out of order", k)
			}
			name := string(v)
			p.domains = append(p.domains, name)
			p.domainIDs[name] = uint32(len(p.domains))
			return nil
		})
		if err != nil {
			p.reset()
			return err
		}
	}
	if b := tx.Bucket(bClients); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			ip, ok := netip.AddrFromSlice(v)
			if len(k) != 4 || !ok || binary.BigEndian.Uint32(k) != uint32(len(p.clients)+1) {
				return fmt.Errorf("dns: load: client %x malformed", k)
			}
			p.clients = append(p.clients, ip)
			p.clientIDs[ip] = uint32(len(p.clients))
			return nil
		})
		if err != nil {
			p.reset()
			return err
		}
	}
	return nil
}

// Apply implements runner.Projection: dns.read adds its rows to their
// hours and moves its source's cursor; retention.purged drops the hours
// before its DNS cutoff.
func (p *Projection) Apply(tx *bolt.Tx, ev events.Envelope) error {
	switch ev.Kind {
	case events.KindDNSRead:
		var r events.DNSRead
		if err := p.reg.DecodeInto(ev, &r); err != nil {
			return fmt.Errorf("dns: %w", err)
		}
		return p.applyRead(tx, ev, &r)
	case events.KindRetentionPurged:
		var r events.RetentionPurged
		if err := p.reg.DecodeInto(ev, &r); err != nil {
			return fmt.Errorf("dns: %w", err)
		}
		if r.DNSBefore != nil {
			return purge(tx, *r.DNSBefore)
		}
	}
	return nil
}

// hourOf is the stored hour of a Unix time.
func hourOf(unix int64) (uint32, bool) {
	if unix < 0 || unix/3600 > int64(^uint32(0)) {
		return 0, false
	}
	return uint32(unix / 3600), true
}

// lookup is one domain's count in a client's hour.
type lookup struct {
	domain         uint32
	count, blocked uint64
}

func (p *Projection) applyRead(tx *bolt.Tx, ev events.Envelope, r *events.DNSRead) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	hb, ab := tx.Bucket(bHours), tx.Bucket(bAnswers)
	hb.FillPercent, ab.FillPercent = hourFillPercent, hourFillPercent
	// The rows of one client and hour are merged into its value at once.
	type hk struct{ hour, client uint32 }
	adds := map[hk][]lookup{}
	type ak struct{ hour, domain uint32 }
	answers := map[ak][]netip.Addr{}
	for _, row := range r.Rows {
		h, ok := hourOf(row.Hour)
		ip, err := netip.ParseAddr(row.Client)
		if !ok || err != nil || len(row.Lookups) == 0 {
			continue // not written by this build's ingest
		}
		cid, err := p.clientID(tx, ip.Unmap().WithZone(""))
		if err != nil {
			return err
		}
		k := hk{h, cid}
		for _, l := range row.Lookups {
			if l.Domain == "" || l.Count == 0 {
				continue
			}
			did, err := p.domainID(tx, l.Domain)
			if err != nil {
				return err
			}
			adds[k] = append(adds[k], lookup{did, uint64(l.Count), uint64(min(l.Blocked, l.Count))})
			for _, s := range l.Answers {
				if a, err := netip.ParseAddr(s); err == nil {
					answers[ak{h, did}] = append(answers[ak{h, did}], a.Unmap().WithZone(""))
				}
			}
		}
	}
	keys := make([]hk, 0, len(adds))
	for k := range adds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b hk) int {
		if a.hour != b.hour {
			return cmpU32(a.hour, b.hour)
		}
		return cmpU32(a.client, b.client)
	})
	for _, k := range keys {
		key := make([]byte, 8)
		binary.BigEndian.PutUint32(key, k.hour)
		binary.BigEndian.PutUint32(key[4:], k.client)
		cur, err := decodeLookups(hb.Get(key))
		if err != nil {
			return fmt.Errorf("dns: hour %d client %d: %w", k.hour, k.client, err)
		}
		if err := hb.Put(key, encodeLookups(mergeLookups(cur, adds[k]))); err != nil {
			return fmt.Errorf("dns: put lookups: %w", err)
		}
	}
	akeys := make([]ak, 0, len(answers))
	for k := range answers {
		akeys = append(akeys, k)
	}
	slices.SortFunc(akeys, func(a, b ak) int {
		if a.hour != b.hour {
			return cmpU32(a.hour, b.hour)
		}
		return cmpU32(a.domain, b.domain)
	})
	for _, k := range akeys {
		key := make([]byte, 8)
		binary.BigEndian.PutUint32(key, k.hour)
		binary.BigEndian.PutUint32(key[4:], k.domain)
		cur := decodeAddrs(ab.Get(key))
		n := len(cur)
		for _, a := range answers[k] {
			if len(cur) >= MaxAnswers {
				break
			}
			if !slices.Contains(cur, a) {
				cur = append(cur, a)
			}
		}
		if len(cur) == n {
			continue
		}
		slices.SortFunc(cur, func(x, y netip.Addr) int { return x.Compare(y) })
		if err := ab.Put(key, encodeAddrs(cur)); err != nil {
			return fmt.Errorf("dns: put answers: %w", err)
		}
	}
	rec := sourceRec{Kind: r.Kind, Cursor: r.Cursor, Seq: ev.Seq, Finished: r.Finished.UTC()}
	if r.Cursor == "" {
		// A read that moved no cursor keeps the one before.
		if old := tx.Bucket(bSources).Get([]byte(ev.Source)); old != nil {
			var o sourceRec
			if err := json.Unmarshal(old, &o); err == nil {
				rec.Cursor = o.Cursor
			}
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	if err := tx.Bucket(bSources).Put([]byte(ev.Source), b); err != nil {
		return fmt.Errorf("dns: source %s: %w", ev.Source, err)
	}
	return nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// clientID returns ip's id, adding it to the dictionary when new. The
// caller holds the write lock.
func (p *Projection) clientID(tx *bolt.Tx, ip netip.Addr) (uint32, error) {
	if id, ok := p.clientIDs[ip]; ok {
		return id, nil
	}
	id := uint32(len(p.clients) + 1)
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], id)
	if err := tx.Bucket(bClients).Put(k[:], ip.AsSlice()); err != nil {
		return 0, fmt.Errorf("dns: add client: %w", err)
	}
	p.clients = append(p.clients, ip)
	p.clientIDs[ip] = id
	return id, nil
}

// domainID returns name's id, adding it to the dictionary when new.
func (p *Projection) domainID(tx *bolt.Tx, name string) (uint32, error) {
	if id, ok := p.domainIDs[name]; ok {
		return id, nil
	}
	id := uint32(len(p.domains) + 1)
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], id)
	if err := tx.Bucket(bDomains).Put(k[:], []byte(name)); err != nil {
		return 0, fmt.Errorf("dns: add domain: %w", err)
	}
	p.domains = append(p.domains, name)
	p.domainIDs[name] = id
	return id, nil
}

// errMalformed is a stored value this build cannot read.
var errMalformed = errors.New("malformed stored lookups")

// eachLookup calls fn with each lookup of a stored value, in domain id
// order, without allocating.
func eachLookup(b []byte, fn func(lookup)) error {
	var prev uint64
	for len(b) > 0 {
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return errMalformed
			}
			v[i], b = x, b[n:]
		}
		prev += v[0]
		if prev == 0 || prev > uint64(^uint32(0)) {
			return errMalformed
		}
		fn(lookup{uint32(prev), v[1], v[2]})
	}
	return nil
}

func decodeLookups(b []byte) ([]lookup, error) {
	var out []lookup
	var prev uint64
	for len(b) > 0 {
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, errMalformed
			}
			v[i], b = x, b[n:]
		}
		prev += v[0]
		if prev > uint64(^uint32(0)) {
			return nil, errMalformed
		}
		out = append(out, lookup{uint32(prev), v[1], v[2]})
	}
	return out, nil
}

func encodeLookups(ls []lookup) []byte {
	out := make([]byte, 0, len(ls)*5)
	var prev uint32
	for _, l := range ls {
		out = binary.AppendUvarint(out, uint64(l.domain-prev))
		out = binary.AppendUvarint(out, l.count)
		out = binary.AppendUvarint(out, l.blocked)
		prev = l.domain
	}
	return out
}

// mergeLookups adds adds to cur (sorted by domain) and returns the sum,
// sorted.
func mergeLookups(cur, adds []lookup) []lookup {
	out := slices.Clone(cur)
	for _, a := range adds {
		out = addLookup(out, a)
	}
	return out
}

// addLookup adds a to sum (sorted by domain), in place: to its domain's
// counts, or as a new entry where it sorts.
func addLookup(sum []lookup, a lookup) []lookup {
	i, found := slices.BinarySearchFunc(sum, a.domain, func(l lookup, d uint32) int { return cmpU32(l.domain, d) })
	if found {
		sum[i].count += a.count
		sum[i].blocked += a.blocked
		return sum
	}
	return slices.Insert(sum, i, a)
}

func decodeAddrs(b []byte) []netip.Addr {
	var out []netip.Addr
	for len(b) > 0 {
		n := int(b[0])
		if (n != 4 && n != 16) || len(b) < 1+n {
			return out
		}
		if a, ok := netip.AddrFromSlice(b[1 : 1+n]); ok {
			out = append(out, a)
		}
		b = b[1+n:]
	}
	return out
}

func encodeAddrs(as []netip.Addr) []byte {
	out := make([]byte, 0, len(as)*5)
	for _, a := range as {
		s := a.AsSlice()
		out = append(out, byte(len(s)))
		out = append(out, s...)
	}
	return out
}

// purge deletes every hour before cutoff (an hour that began before it).
func purge(tx *bolt.Tx, cutoff time.Time) error {
	end, ok := hourOf(cutoff.Unix())
	if !ok {
		return nil
	}
	for _, name := range [][]byte{bHours, bAnswers} {
		c := tx.Bucket(name).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint32(k) < end; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return fmt.Errorf("dns: purge: %w", err)
			}
		}
	}
	return nil
}
