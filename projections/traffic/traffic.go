package traffic

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
// 2: rows past TopPeers peers per address and hour are folded by
// country; smaller values.
const Version = 2

// Buckets.
const (
	BucketHours   = "traffic.hours"
	BucketSources = "traffic.sources"
)

var (
	bHours   = []byte(BucketHours)
	bSources = []byte(BucketSources)
)

// Row keys: hour (8, unix seconds) | minute (1) | local (16) | kind (1) |
// peer (16) | direction (1: 0 out, 1 in) | protocol (1) | port (2).
// Minute is the minute of the hour in which the row first appeared (of
// its window's end): a window's new rows all go to its own minute, after
// the rows of earlier minutes, so writing them appends to the hour
// instead of touching every page of it (a window's write transaction
// holds every page it touches in memory until the commit: with rows by
// local address only, that was every row of the hour so far, 500,000
// rows by the bench's third window). Kind kindPeer is a peer's row;
// kindOther is the fold of the peers past TopPeers, one row per country
// and direction: its peer field is zero but for the country's two
// letters in its last two bytes (zero: no country), and protocol and port
// are zero. Values: peer country (2 bytes, zero when none) | bytes,
// packets, flows (uvarint each).
const (
	offMinute = 8
	offLocal  = 9
	offKind   = 25
	offPeer   = 26
	offDir    = 42
	offProto  = 43
	offPort   = 44
	keyLen    = 46
	maxValLen = 2 + 3*binary.MaxVarintLen64
)

// hoursFillPercent packs the hours' pages nearly full at commit
// (bbolt's default, half, suits keys that land anywhere): a window's new
// rows all go to its own minute, after the earlier minutes', so its
// writes are appends, and a page split at half is left half empty for
// good. A row added to in an earlier minute only grows by a varint byte
// now and then.
const hoursFillPercent = 0.9

// Row kinds.
const (
	kindPeer  = 0
	kindOther = 1
)

// TopPeers is how many peers of one local address in one hour keep
// their own rows. The rows of any further peer of that hour are folded
// into one row per (country, direction) of the address (by=peer shows
// them as "other:<country>"), so an address that talks to every host of
// the Internet costs at most TopPeers rows and a few folded ones an hour,
// and every total (per device, hour, country, direction) stays exact.
// Peers keep their rows in the order they first appear in the hour, the
// busiest first within a window; a peer that got a row keeps every flow
// of the hour in it, a folded one never gets one later in that hour.
// Changing it is a Version change.
const TopPeers = 100

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
	// Outside gives the router's outside address (the inventory's
	// Outside): when Home is empty, its country is the home (the
	// contract's location.country: "Empty: derived from the router's
	// outside address"). nil: Home alone.
	Outside func() (netip.Addr, string)
	// PeerName names a peer as a DNS answer recorded for the device did
	// (the DNS plugins' hook); nil: peers have no names.
	PeerName func(deviceID string, peer netip.Addr, at time.Time) string
	// Registry decodes payloads. Default events.Default.
	Registry *events.Registry
	// ReleaseMapped drops the database's pages from the process's memory
	// map inside a transaction (store.ReleaseMappedTx). A window written
	// in parts calls it in each part, and Overview, which reads every row
	// of its range, every releaseRows rows, so that the pages they read
	// do not all count in serve's resident set at once. nil: never.
	ReleaseMapped func(*bolt.Tx) error
}

// releaseSeeks is how many seeks into earlier minutes a window's writer
// makes between two releases of the mapped pages (Options.ReleaseMapped)
// within a part. A seek maps the root, branch and leaf pages on its way
// (16 KiB each), and the kernel maps more around each: 64 KiB, or the
// whole large folio of the page cache that holds it, up to 2 MiB, on
// recent kernels. A small window late in the hour is one part whose
// addresses have rows in every earlier minute: with no release between
// seeks it mapped 45 MB of the database at once in the memory run;
// releasing every 256 seeks, 5.5–15 MB at the windows (sampled every
// 50 ms); every 32, 0.6–10 MB, for 4 % more time a window (`-bench
// ApplyWindows`: 332 → 345 ms; every 8: 384 ms).
var releaseSeeks = 32

// releaseRows is how many rows Overview reads between two releases of
// the mapped pages: about 6 MB of pages. A variable for tests.
var releaseRows = 65536

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
			if bytes.Equal(k, progressKey) {
				return nil
			}
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
		// The rows are read straight from the payload, a side at a time
		// (events.EachTrafficRow), never decoded into a []TrafficRow.
		payload, err := p.reg.Upcast(ev)
		if err != nil {
			return fmt.Errorf("traffic: %w", err)
		}
		var w windowHead
		if err := json.Unmarshal(payload, &w); err != nil {
			return fmt.Errorf("traffic: seq %d: decode %s: %w", ev.Seq, ev.Kind, err)
		}
		if err := p.source(tx, ev.Source, &w); err != nil {
			return err
		}
		return p.finishRows(tx, ev, payload)
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

// windowHead is what the projection reads of traffic.recorded besides
// its rows.
type windowHead struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	First    bool      `json:"first"`
	Final    bool      `json:"final"`
}

// source records the listener's window for gap detection.
func (p *Projection) source(tx *bolt.Tx, src string, w *windowHead) error {
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

func (v *val) addVal(o val) {
	v.bytes += o.bytes
	v.packets += o.packets
	v.flows += o.flows
}

// side is one side of a row: its key (hour set) and totals.
type side struct {
	key [keyLen]byte
	v   val
}

// A window's rows are written as sides, each row twice: first from its
// source's side (direction out), then from its destination's (in). The
// sides of one direction are written a group at a time, a group being one
// local address's sides, in key order: bbolt splits pages at commit, and
// puts in random order inside one transaction cost about the square of
// their number (a window of 100,000 rows took 23 s), in order far less.
// The listener writes rows sorted by source, so the out sides arrive
// grouped by local address and in key order and are streamed from the
// payload; the in sides (and the out sides of a payload not so sorted)
// are collected and sorted first.
//
// A large window is written in parts (ApplyChunks, runner.Chunker): a
// walk can stop after a budget of sides, at a position (direction,
// groups done), and go on from there in a later transaction. The groups
// are the same and come in the same order either way, so the rows are
// too.

// Windows larger than chunkBytes of payload (about 10,000 rows) are
// written in parts of at least chunkSides sides (a part's transaction
// then holds a few MB, whatever the window's size). Variables for tests.
var (
	chunkBytes = 256 << 10
	chunkSides = 16384
)

// progressKey is where, in BucketSources, a window being written in parts
// records how far it got (a progress). No source name starts with 0.
var progressKey = []byte("\x00progress")

// progress is a window written in parts: its seq and how far its rows
// are written.
type progress struct {
	Seq uint64  `json:"seq"`
	Pos walkPos `json:"pos"`
}

// Chunked implements runner.Chunker: a large traffic.recorded.
func (p *Projection) Chunked(ev events.Envelope) bool {
	return ev.Kind == events.KindTrafficRecorded && len(ev.Payload) > chunkBytes
}

// ApplyChunks implements runner.Chunker: it writes the rows of a large
// window in transactions of chunkSides sides each, recording its
// progress in each, from where an earlier run left it; it stops
// between two parts when ctx ends. Apply then writes the rest (nothing)
// and the listener's state.
func (p *Projection) ApplyChunks(ctx context.Context, db projections.DB, ev events.Envelope) error {
	payload, err := p.reg.Upcast(ev)
	if err != nil {
		return fmt.Errorf("traffic: %w", err)
	}
	var pr progress
	if err := db.View(func(tx *bolt.Tx) error { pr, err = readProgress(tx, ev.Seq); return err }); err != nil {
		return err
	}
	rw, err := p.newWalk(ev.Time, payload)
	if err != nil {
		return err
	}
	for pos := pr.Pos; pos.Dir < 2; {
		if err := ctx.Err(); err != nil {
			return err // the rest after the next start
		}
		var next walkPos
		err := db.Update(func(tx *bolt.Tx) error {
			n, err := rw.write(tx, pos, chunkSides)
			if err != nil {
				return err
			}
			if err := chunkHook(n); err != nil {
				return err
			}
			next = n
			// A part reads the rows its addresses already have in every
			// earlier minute of the hour; released here, those pages do
			// not add up over the parts to nearly the whole hour in
			// serve's resident set.
			p.releaseMapped(tx)
			return putProgress(tx, progress{Seq: ev.Seq, Pos: n})
		})
		if err != nil {
			return fmt.Errorf("traffic: seq %d: write rows from %+v: %w", ev.Seq, pos, err)
		}
		pos = next
	}
	return nil
}

// releaseMapped calls Options.ReleaseMapped, if set, in tx. A failure
// costs memory only (the kernel reclaims the pages anyway), so it stops
// nothing.
func (p *Projection) releaseMapped(tx *bolt.Tx) {
	if p.opts.ReleaseMapped != nil {
		_ = p.opts.ReleaseMapped(tx)
	}
}

// chunkHook runs in each part's transaction before its progress is
// stored; tests make it fail.
var chunkHook = func(walkPos) error { return nil }

// readProgress returns the progress of seq's window, the start when
// none is recorded for it.
func readProgress(tx *bolt.Tx, seq uint64) (progress, error) {
	b := tx.Bucket(bSources)
	if b == nil {
		return progress{Seq: seq}, nil
	}
	v := b.Get(progressKey)
	if v == nil {
		return progress{Seq: seq}, nil
	}
	var pr progress
	if err := json.Unmarshal(v, &pr); err != nil {
		return progress{}, fmt.Errorf("traffic: progress of a window in parts: %w", err)
	}
	if pr.Seq != seq {
		return progress{Seq: seq}, nil // another window's (never finished): not this one's
	}
	return pr, nil
}

func putProgress(tx *bolt.Tx, pr progress) error {
	v, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	return tx.Bucket(bSources).Put(progressKey, v)
}

// finishRows writes a window's rows, or what ApplyChunks left of them,
// and forgets its progress.
func (p *Projection) finishRows(tx *bolt.Tx, ev events.Envelope, payload []byte) error {
	pr, err := readProgress(tx, ev.Seq)
	if err != nil {
		return err
	}
	if pr.Pos.Dir < 2 {
		rw, err := p.newWalk(ev.Time, payload)
		if err != nil {
			return err
		}
		if _, err := rw.write(tx, pr.Pos, 0); err != nil {
			return err
		}
	}
	if tx.Bucket(bSources).Get(progressKey) != nil {
		return tx.Bucket(bSources).Delete(progressKey)
	}
	return nil
}

// walkPos is how far a window's sides are written: the groups of
// direction Dir done, every group of the directions before it.
type walkPos struct {
	Dir   byte `json:"dir"`
	Group int  `json:"group"`
}

// rowWalk writes one window's sides.
type rowWalk struct {
	p      *Projection
	packed []byte // the window's rows, packed (events.PackedTrafficRows)
	hour   time.Time
	base   [keyLen]byte // hour and minute set
	sorted bool         // the rows are sorted by source
	n      int          // rows
	// collected holds a direction's rows by local address, once needed;
	// kept from one part of the walk to the next.
	collected [2][]rowRef
	group     []side  // scratch
	w         *writer // the parts' writer
}

// rowRef is a row of the window by its local end (for one direction)
// and its offset in the packed rows: 20 bytes, where its side would be
// 72 (a window of 166,667 rows: 3.3 MB instead of 12 MB).
type rowRef struct {
	local [16]byte
	off   uint32
}

func (p *Projection) newWalk(at time.Time, payload []byte) (*rowWalk, error) {
	// A window's rows count in the hour it ends in; its end is exclusive,
	// so a window that ends on the hour (the listener ends the hour's last
	// window there) counts in the hour before.
	at = at.UTC().Add(-time.Nanosecond)
	rw := &rowWalk{p: p, hour: at.Truncate(time.Hour), sorted: true}
	binary.BigEndian.PutUint64(rw.base[:8], uint64(rw.hour.Unix()))
	rw.base[offMinute] = byte(at.Sub(rw.hour) / time.Minute)
	packed, err := events.PackedTrafficRows(payload)
	if err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	if len(packed) > math.MaxUint32 {
		return nil, fmt.Errorf("traffic: a window of %d bytes of rows", len(packed))
	}
	rw.packed = packed
	var prev netip.Addr
	err = rw.each(func(r *events.TrafficRowAddrs, _ uint32) error {
		if rw.sorted && r.Src.Unmap().Less(prev) {
			rw.sorted = false
		}
		prev = r.Src.Unmap()
		rw.n++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	return rw, nil
}

// each calls fn with every row and its offset, in order.
func (rw *rowWalk) each(fn func(r *events.TrafficRowAddrs, off uint32) error) error {
	var r events.TrafficRowAddrs
	for rest := rw.packed; len(rest) > 0; {
		off := uint32(len(rw.packed) - len(rest))
		var err error
		if rest, err = events.NextTrafficRow(rest, &r); err != nil {
			return err
		}
		if err := fn(&r, off); err != nil {
			return err
		}
	}
	return nil
}

// sideOf is the side of r seen from direction dir's local end.
func (rw *rowWalk) sideOf(r *events.TrafficRowAddrs, dir byte) side {
	k := rw.base
	local, peer := r.Src, r.Dst
	if dir == 1 {
		local, peer = r.Dst, r.Src
	}
	putAddr(k[offLocal:offKind], local)
	k[offKind] = kindPeer
	putAddr(k[offPeer:offDir], peer)
	k[offDir], k[offProto] = dir, r.Proto
	binary.BigEndian.PutUint16(k[offPort:], r.Port)
	return side{key: k, v: val{r.Bytes, r.Packets, r.Flows}}
}

// write writes the groups from pos on into tx, stopping once at least
// budget sides are written (budget ≤ 0: all). It returns where it
// stopped: Dir 2 when the window is done.
func (rw *rowWalk) write(tx *bolt.Tx, pos walkPos, budget int) (walkPos, error) {
	// One writer for every part: its scratch slices and what is left of
	// its slab (never handed to bbolt yet) carry over.
	if rw.w == nil {
		rw.w = &writer{p: rw.p}
	}
	w := rw.w
	w.bk = tx.Bucket(bHours)
	w.bk.FillPercent = hoursFillPercent
	w.cur = w.bk.Cursor()
	w.minutes = minutesOf(w.cur, rw.base[:8], rw.base[offMinute])
	written := 0
	for dir := pos.Dir; dir < 2; dir++ {
		from := 0
		if dir == pos.Dir {
			from = pos.Group
		}
		stop := errors.New("budget spent")
		g := 0
		each := func(group []side) error {
			if g++; g <= from {
				return nil
			}
			if err := w.group(group); err != nil {
				return err
			}
			written += len(group)
			if budget > 0 && written >= budget {
				return stop
			}
			return nil
		}
		var err error
		if dir == 0 && rw.sorted {
			err = rw.streamed(each)
		} else {
			err = rw.sortedGroups(dir, from, each)
		}
		switch {
		case errors.Is(err, stop):
			return walkPos{Dir: dir, Group: g}, nil // (a next part may find nothing left)
		case err != nil:
			return pos, fmt.Errorf("traffic: %w", err)
		}
	}
	return walkPos{Dir: 2}, nil
}

// streamed calls each with the out sides of every local address, in the
// payload's order (sorted by source).
func (rw *rowWalk) streamed(each func([]side) error) error {
	group := rw.group[:0]
	err := rw.each(func(r *events.TrafficRowAddrs, _ uint32) error {
		s := rw.sideOf(r, 0)
		if len(group) > 0 && [16]byte(group[0].key[offLocal:offKind]) != [16]byte(s.key[offLocal:offKind]) {
			if err := each(group); err != nil {
				return err
			}
			group = group[:0]
		}
		group = append(group, s)
		return nil
	})
	if err == nil && len(group) > 0 {
		err = each(group)
	}
	rw.group = group[:0]
	return err
}

// sortedGroups calls each with the sides of direction dir, a local
// address at a time, in address order (a group's sides in the order of
// the rows; the writer sorts them). The first from groups are counted
// but not built: a later part of the walk skips what earlier parts wrote.
func (rw *rowWalk) sortedGroups(dir byte, from int, each func([]side) error) error {
	refs, err := rw.collect(dir)
	if err != nil {
		return err
	}
	var r events.TrafficRowAddrs
	g := 0
	for lo := 0; lo < len(refs); {
		hi := lo + 1
		for hi < len(refs) && refs[hi].local == refs[lo].local {
			hi++
		}
		group := rw.group[:0]
		if g++; g > from {
			for _, ref := range refs[lo:hi] {
				if _, err := events.NextTrafficRow(rw.packed[ref.off:], &r); err != nil {
					return err
				}
				group = append(group, rw.sideOf(&r, dir))
			}
		}
		err := each(group)
		rw.group = group[:0]
		if err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// collect returns direction dir's rows sorted by their local end (then
// by offset), collected once.
func (rw *rowWalk) collect(dir byte) ([]rowRef, error) {
	if rw.collected[dir] != nil {
		return rw.collected[dir], nil
	}
	if dir == 1 {
		rw.collected[0] = nil // done with: a window's worth of memory
	}
	refs := make([]rowRef, 0, rw.n)
	err := rw.each(func(r *events.TrafficRowAddrs, off uint32) error {
		local := r.Src
		if dir == 1 {
			local = r.Dst
		}
		ref := rowRef{off: off}
		putAddr(ref.local[:], local)
		refs = append(refs, ref)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(refs, func(a, b rowRef) int {
		if c := bytes.Compare(a.local[:], b.local[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	rw.collected[dir] = refs
	return refs, nil
}

// writer writes groups of sides into the hours bucket. Keys and values
// are carved out of large slabs: bbolt keeps them until the commit, and
// one allocation per row costs the collector more than the bytes.
type writer struct {
	p    *Projection
	bk   *bolt.Bucket
	slab []byte
	// cur finds the rows to add to: one cursor, repositioned for every
	// address (Bucket.Get allocates a cursor per call).
	cur *bolt.Cursor
	// minutes of the hour that hold rows, the window's own among them.
	minutes []byte
	// seeks since the mapped pages were last released (releaseSeeks).
	seeks int

	// scratch, reused from group to group
	kept  [][16]byte
	fresh []peerSum
	out   []side
	exist []existing
	puts  []existing
}

type peerSum struct {
	peer  [16]byte
	bytes uint64
	keep  bool
}

const slabSize = 256 << 10

func (w *writer) alloc(n int) []byte {
	if len(w.slab) < n {
		w.slab = make([]byte, slabSize)
	}
	b := w.slab[:n:n]
	w.slab = w.slab[n:]
	return b
}

// minutesOf lists the minutes of the hour (8-byte prefix) that hold rows,
// with cur (the window's own) among them, in order.
func minutesOf(c *bolt.Cursor, hour []byte, cur byte) []byte {
	out := presentMinutes(c, hour, nil)
	if _, ok := slices.BinarySearch(out, cur); !ok {
		out = append(out, cur)
		slices.Sort(out)
	}
	return out
}

// presentMinutes appends the minutes of the hour (8-byte prefix) that
// hold rows to out, in order: a seek per minute that has any.
func presentMinutes(c *bolt.Cursor, hour []byte, out []byte) []byte {
	var seek [offMinute + 1]byte
	copy(seek[:], hour)
	for m := 0; m < 256; {
		seek[offMinute] = byte(m)
		k, _ := c.Seek(seek[:])
		if len(k) <= offMinute || !bytes.Equal(k[:offMinute], hour) {
			break
		}
		out = append(out, k[offMinute])
		m = int(k[offMinute]) + 1
	}
	return out
}

// existing is a stored row of the group's address.
type existing struct {
	key     [keyLen]byte
	v       val
	country [2]byte
}

// ident compares rows by what names them within an address and hour:
// kind, peer, direction, protocol and port (not the minute).
func ident(a, b *[keyLen]byte) int { return bytes.Compare(a[offKind:], b[offKind:]) }

// group adds the sides of one local address (one hour, all keyed with
// the window's minute) to the bucket: the sides of peers that have, or
// get, their own rows (TopPeers), then the rest folded by country and
// direction. A row the address already has, in whatever minute, is
// added to; a new one goes to the window's minute.
func (w *writer) group(g []side) error {
	if !slices.IsSortedFunc(g, func(a, b side) int { return bytes.Compare(a.key[:], b.key[:]) }) {
		slices.SortFunc(g, func(a, b side) int { return bytes.Compare(a.key[:], b.key[:]) })
	}
	// The rows this address already has in this hour, and their peers.
	var prefix [offKind]byte
	copy(prefix[:], g[0].key[:offKind])
	w.exist, w.kept = w.exist[:0], w.kept[:0]
	if w.seeks += len(w.minutes); w.seeks >= releaseSeeks {
		w.seeks = 0
		w.p.releaseMapped(w.bk.Tx())
	}
	for _, m := range w.minutes {
		prefix[offMinute] = m
		for k, v := w.cur.Seek(prefix[:]); k != nil && bytes.HasPrefix(k, prefix[:]); k, v = w.cur.Next() {
			if len(k) != keyLen || len(v) < 2 {
				return errBadRow
			}
			old, err := decodeVal(v)
			if err != nil {
				return err
			}
			w.exist = append(w.exist, existing{key: [keyLen]byte(k), v: old, country: [2]byte(v[:2])})
			if k[offKind] == kindPeer {
				w.kept = append(w.kept, [16]byte(k[offPeer:offDir]))
			}
		}
	}
	slices.SortFunc(w.exist, func(a, b existing) int { return ident(&a.key, &b.key) })
	slices.SortFunc(w.kept, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	w.kept = slices.Compact(w.kept)
	// The new peers, and which of them get rows: all if there is room,
	// else the busiest of this window.
	w.fresh = w.fresh[:0]
	for i := range g {
		peer := [16]byte(g[i].key[offPeer:offDir])
		if _, ok := slices.BinarySearchFunc(w.kept, peer, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }); ok {
			continue
		}
		if n := len(w.fresh); n > 0 && w.fresh[n-1].peer == peer {
			w.fresh[n-1].bytes += g[i].v.bytes
			continue
		}
		w.fresh = append(w.fresh, peerSum{peer: peer, bytes: g[i].v.bytes})
	}
	room := max(0, TopPeers-len(w.kept))
	if len(w.fresh) <= room {
		for i := range w.fresh {
			w.fresh[i].keep = true
		}
	} else if room > 0 {
		order := make([]int, len(w.fresh))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			if c := cmp.Compare(w.fresh[b].bytes, w.fresh[a].bytes); c != 0 {
				return c
			}
			return bytes.Compare(w.fresh[a].peer[:], w.fresh[b].peer[:])
		})
		for _, i := range order[:room] {
			w.fresh[i].keep = true
		}
	}
	// Every side under the identity it is stored by: its own, or its
	// (country, direction) fold.
	w.out = w.out[:0]
	fi := 0
	for i := range g {
		s := g[i]
		peer := [16]byte(s.key[offPeer:offDir])
		for fi < len(w.fresh) && bytes.Compare(w.fresh[fi].peer[:], peer[:]) < 0 {
			fi++
		}
		if fi < len(w.fresh) && w.fresh[fi].peer == peer && !w.fresh[fi].keep {
			var o side
			copy(o.key[:offKind], s.key[:offKind])
			o.key[offKind] = kindOther
			copy(o.key[offPeer+14:offDir], w.p.opts.Countries.Country(getAddr(peer[:])))
			o.key[offDir] = s.key[offDir]
			o.v = s.v
			s = o
		}
		w.out = append(w.out, s)
	}
	slices.SortFunc(w.out, func(a, b side) int { return bytes.Compare(a.key[:], b.key[:]) })
	// Summed by identity, added to the row it already has (in its
	// minute), then written in key order.
	w.puts = w.puts[:0]
	for i := 0; i < len(w.out); {
		s := w.out[i]
		for i++; i < len(w.out) && w.out[i].key == s.key; i++ {
			s.v.addVal(w.out[i].v)
		}
		e := existing{key: s.key, v: s.v}
		if j, ok := slices.BinarySearchFunc(w.exist, &s.key, func(x existing, k *[keyLen]byte) int { return ident(&x.key, k) }); ok {
			e.key, e.country = w.exist[j].key, w.exist[j].country
			e.v.addVal(w.exist[j].v)
		} else if s.key[offKind] == kindPeer {
			copy(e.country[:], w.p.opts.Countries.Country(getAddr(s.key[offPeer:offDir])))
		} else {
			copy(e.country[:], s.key[offDir-2:offDir])
		}
		w.puts = append(w.puts, e)
	}
	slices.SortFunc(w.puts, func(a, b existing) int { return bytes.Compare(a.key[:], b.key[:]) })
	for i := range w.puts {
		if err := w.put(&w.puts[i]); err != nil {
			return err
		}
	}
	return nil
}

// put writes a row.
func (w *writer) put(e *existing) error {
	kv := w.alloc(keyLen + maxValLen)
	copy(kv, e.key[:])
	v := append(kv[keyLen:keyLen:len(kv)], e.country[:]...)
	v = binary.AppendUvarint(v, e.v.bytes)
	v = binary.AppendUvarint(v, e.v.packets)
	v = binary.AppendUvarint(v, e.v.flows)
	if err := w.bk.Put(kv[:keyLen:keyLen], v); err != nil {
		return fmt.Errorf("put row: %w", err)
	}
	return nil
}

// errBadRow is returned for a stored value this build cannot read.
var errBadRow = errors.New("traffic: malformed row value")

func decodeVal(b []byte) (val, error) {
	var v val
	if len(b) < 2 {
		return v, errBadRow
	}
	b = b[2:]
	for _, dst := range []*uint64{&v.bytes, &v.packets, &v.flows} {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return v, errBadRow
		}
		*dst, b = n, b[k:]
	}
	return v, nil
}

func countryOf(v []byte) string {
	if len(v) < 2 || v[0] == 0 {
		return ""
	}
	return string(v[:2])
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

// OtherPrefix starts the key of a by=peer item that is the fold of a
// device's peers past TopPeers in an hour, followed by their country
// ("other:DE"; "other:" for peers with none). Such items have no Peer.
const OtherPrefix = "other:"

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
	own := inventory.HoldingOwners(id, hs)
	from, until := f.Since.UTC().Truncate(time.Hour), f.Until.UTC()
	err = p.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bHours).Cursor()
		var prefix [offKind]byte
		var minutes []byte
		for hour := from; hour.Before(until); hour = hour.Add(time.Hour) {
			if err := ctx.Err(); err != nil {
				return err
			}
			binary.BigEndian.PutUint64(prefix[:8], uint64(hour.Unix()))
			minutes = presentMinutes(c, prefix[:8], minutes[:0])
			for ip := range ips {
				if dev, ok := idx.At(ip, hour); !ok || !own[dev] {
					continue
				}
				putAddr(prefix[offLocal:], ip)
				for _, m := range minutes {
					prefix[offMinute] = m
					for k, v := c.Seek(prefix[:]); k != nil && string(k[:offKind]) == string(prefix[:]); k, v = c.Next() {
						if len(k) != keyLen {
							return errBadRow
						}
						vv, err := decodeVal(v)
						if err != nil {
							return err
						}
						other := k[offKind] == kindOther
						var peer netip.Addr
						if !other {
							peer = getAddr(k[offPeer:offDir])
						}
						var key string
						it := &Item{}
						switch by {
						case ByPeer:
							if other {
								key = OtherPrefix + countryOf(v)
							} else {
								key = peer.String()
							}
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
								it.Country = countryOf(v)
								if !other {
									it.Peer = key
									it.peer, it.hour = peer, hour
								}
							case ByCountry:
								it.Country = key
							case ByHour:
								h := hour
								it.Hour = &h
							}
							items[key] = it
						}
						it.Totals.add(k[offDir] == 1, vv)
					}
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
			if it.peer.IsValid() {
				it.Name = p.opts.PeerName(id, it.peer, it.hour)
			}
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

// Home is the country the map draws from and where it comes from:
// location.country ("location.country"), else the country of the router's
// outside address ("outside address <ip> (read by <source>)"), else
// nothing: no country for an outside address that is not public (behind
// carrier-grade NAT) or that the database does not place.
func (p *Projection) Home() (country, from string) {
	if p.opts.Home != "" {
		return p.opts.Home, "location.country"
	}
	if p.opts.Outside == nil {
		return "", ""
	}
	a, src := p.opts.Outside()
	if !a.IsValid() {
		return "", ""
	}
	if c := p.opts.Countries.Country(a); c != "" {
		return c, fmt.Sprintf("outside address %s (read by %s)", a, src)
	}
	return "", ""
}

// Overview totals every device's traffic over the hours starting in
// [since, until): the top limit devices, countries and peers by bytes.
// Rows whose local address no device held are not counted.
func (p *Projection) Overview(ctx context.Context, since, until time.Time, limit int) (Overview, error) {
	out := Overview{Since: since.UTC(), Until: until.UTC()}
	out.Home, out.HomeFrom = p.Home()
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
			if n%releaseRows == 0 {
				p.releaseMapped(tx)
			}
			h := int64(binary.BigEndian.Uint64(k))
			if len(k) != keyLen {
				return errBadRow
			}
			local := getAddr(k[offLocal:offKind])
			key := hk{h, local}
			dev, seen := holder[key]
			if !seen {
				dev, _ = idx.At(local, time.Unix(h, 0).UTC())
				holder[key] = dev
			}
			if dev == "" {
				continue
			}
			vv, err := decodeVal(v)
			if err != nil {
				return err
			}
			in, country := k[offDir] == 1, countryOf(v)
			out.Total.add(in, vv)
			acc(devs, dev).add(in, vv)
			acc(countries, country).add(in, vv)
			if k[offKind] == kindOther {
				continue // folded peers: in the totals, never a top peer
			}
			peer := getAddr(k[offPeer:offDir])
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
