package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Name is the projection's consumer name (its checkpoint key). Never
// rename it: a new name means consuming the whole log again.
const Name = "inventory"

// Version of the projection's rows and rules. Raising it rebuilds the
// projection from the log at the next start.
const Version = 3

// Defaults for [Options], the contract's defaults.
const (
	DefaultOnlineWindow = 15 * time.Minute
	DefaultAddressGrace = 6 * time.Hour
)

// Bucket names. Every bucket of this projection starts with "inventory.".
// Source names of the events time passing appends: the presence clock
// (projections/presence) and retention (projections/retention).
const (
	SourceClock     = "clock"
	SourceRetention = "retention"
)

const (
	bucketDevices         = "inventory.devices"
	bucketChanges         = "inventory.changes"
	bucketChangesByDevice = "inventory.changes_by_device"
	bucketChangesByTime   = "inventory.changes_by_time"
	// bucketChangesGroupSteady holds the keys of the presence entries
	// that did not change their merged group's presence (GroupSteady).
	bucketChangesGroupSteady = "inventory.changes_group_steady"
	bucketMeta               = "inventory.meta"
)

var allBuckets = []string{
	bucketDevices, bucketChanges, bucketChangesByDevice, bucketChangesByTime, bucketChangesGroupSteady,
	bucketMeta, bucketReads, bucketSweepBase, bucketHistory, bucketHistoryByTime,
}

// retiredBuckets are buckets older builds wrote: inventory.scans held
// the scan log until projections/scanlog took it over.
var retiredBuckets = []string{"inventory.scans"}

// metaPresence is the key in bucketMeta of the presence evidence.
var metaPresence = []byte("presence")

// Options configures an [Inventory].
type Options struct {
	// OnlineWindow is inventory.online_window. Default 15m.
	OnlineWindow time.Duration
	// AddressGrace is inventory.address_grace. Default 6h.
	AddressGrace time.Duration
	// Vendor names the maker of a MAC (from the IEEE OUI registry), ""
	// when unknown. It is called when a device's MAC is learnt or the
	// projection loads, never stored. Nil: no vendors.
	Vendor func(mac net.HardwareAddr) string
	// Registry decodes payloads. Default events.Default.
	Registry *events.Registry
	// FixedRules keeps OnlineWindow and AddressGrace whatever the log's
	// inventory.rules_set events say (whatif replays the history under
	// other rules). Without it, those events set the rules from their
	// time on (rules.go), and these are the rules before the first.
	FixedRules bool
}

// Validate reports every invalid field.
func (o Options) Validate() error {
	var errs []error
	if o.OnlineWindow < 0 {
		errs = append(errs, fmt.Errorf("inventory.online_window %s: must not be negative", o.OnlineWindow))
	}
	if o.AddressGrace < 0 {
		errs = append(errs, fmt.Errorf("inventory.address_grace %s: must not be negative", o.AddressGrace))
	}
	return errors.Join(errs...)
}

// sweepMark is the start of the newest complete sweep of one prefix.
type sweepMark struct {
	prefix netip.Prefix
	start  time.Time
}

// presenceMeta is the stored form of the presence evidence.
type presenceMeta struct {
	Complete    map[string]time.Time `json:"complete"`
	AnyComplete time.Time            `json:"any_complete"`
	// Sources is the health of every source that has run.
	Sources map[string]*sourceHealth `json:"sources,omitempty"`
}

// Inventory is the inventory projection: devices, the change log and the
// scan log, kept consistent by one Apply. It is safe for concurrent use:
// queries take a read lock, Apply and Load the write lock.
type Inventory struct {
	opts Options
	reg  *events.Registry
	// configured are the rules of Options, in force until a
	// inventory.rules_set event sets others (rules.go).
	configured    Options
	rulesRecorded bool // the rules in force came from an event
	rulesDirty    bool // to be stored at the next Flush

	mu sync.RWMutex
	db *bolt.DB // set by Load; queries of the change and scan logs read it
	// readingAhead is set while a list at an instant reads ahead
	// (startReadAhead): one at a time.
	readingAhead atomic.Bool
	devs         map[string]*device
	byKey        map[string]*device
	byIP         map[string][]*device // holders of a non-retired address
	heap         presenceHeap         // online devices that are not overdue
	overdue      map[string]*device
	sweeps       []sweepMark
	anyDone      time.Time
	health       map[string]*sourceHealth // by source
	reads        map[string]*hostSet      // plugin sources' host sets
	// sweepBases are the sweep sources' last sweeps (sweepbase.go).
	sweepBases map[string]*sweepBase
	version    uint64 // bumped by every change, keys the query caches
	// merges links each merged device to the one it was merged into
	// (merge.go).
	merges map[string]string

	dirty      map[string]*device
	deleted    map[string]bool
	metaDirty  bool
	readsDirty map[string]map[string]bool
	// lastBase is the sweep base of lastBaseSrc, the source of the last
	// sweep (a map lookup saved per sweep).
	lastBase    *sweepBase
	lastBaseSrc string
	// lastCoverage is the coverage last set on a device, which the next
	// one shares when it is the same (see refreshCoverage).
	lastCoverage *projections.Coverage
	// sourceChanges are the source moves of the event being applied.
	sourceChanges []sourceChange

	idxMu sync.Mutex
	idx   *queryCache

	// docs is the document cache's storage, on top of the model: one slot
	// per device (device.slot), read without a lock while the read lock
	// is held, grown and freed only under the write lock (docSlots).
	docs docSlots

	// hist is the memory side of the history rows (at.go).
	hist histState
}

// New returns an empty inventory. It serves queries once the runner has
// called Load.
func New(opts Options) (*Inventory, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	if opts.OnlineWindow == 0 {
		opts.OnlineWindow = DefaultOnlineWindow
	}
	if opts.AddressGrace == 0 {
		opts.AddressGrace = DefaultAddressGrace
	}
	if opts.Registry == nil {
		opts.Registry = events.Default
	}
	i := &Inventory{opts: opts, reg: opts.Registry, configured: opts}
	i.reset()
	return i, nil
}

// reset empties the in-memory state. The caller holds the write lock.
func (i *Inventory) reset() {
	i.devs = map[string]*device{}
	i.byKey = map[string]*device{}
	i.docs = docSlots{}
	i.byIP = map[string][]*device{}
	i.heap = presenceHeap{}
	i.overdue = map[string]*device{}
	i.sweeps = nil
	i.anyDone = time.Time{}
	i.health = map[string]*sourceHealth{}
	i.reads = map[string]*hostSet{}
	i.readsDirty = map[string]map[string]bool{}
	i.sweepBases = map[string]*sweepBase{}
	i.lastBase, i.lastBaseSrc = nil, ""
	i.lastCoverage = nil
	i.dirty = map[string]*device{}
	i.deleted = map[string]bool{}
	i.metaDirty = false
	i.hist.reset()
	i.merges = map[string]string{}
	i.opts.OnlineWindow, i.opts.AddressGrace = i.configured.OnlineWindow, i.configured.AddressGrace
	i.rulesRecorded, i.rulesDirty = false, false
	i.version++
}

// Name is the consumer name, [Name].
func (i *Inventory) Name() string { return Name }

// Version is [Version].
func (i *Inventory) Version() int { return Version }

// Buckets lists the projection's buckets.
func (i *Inventory) Buckets() []string { return slices.Clone(allBuckets) }

// RetiredBuckets implements runner.Retirer: the scan log moved out in a
// change that left this projection's rows and rules (its Version) as
// they were, so a database upgraded across it keeps its inventory and
// loses only the old bucket.
func (i *Inventory) RetiredBuckets() []string { return slices.Clone(retiredBuckets) }

// Load rebuilds the in-memory state from the projection's buckets. The
// runner calls it at start, after a rebuild or restore, and after a
// failed commit (so memory never stays ahead of what is stored).
func (i *Inventory) Load(tx *bolt.Tx) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.reset()
	i.db = tx.DB()
	if b := tx.Bucket([]byte(bucketDevices)); b != nil {
		var in interner
		err := b.ForEach(func(k, v []byte) error {
			d := &device{}
			if err := json.Unmarshal(v, d); err != nil {
				return fmt.Errorf("device %q: %w", k, err)
			}
			in.device(d)
			for _, a := range d.Addrs {
				ip, err := netip.ParseAddr(a.IP)
				if err != nil {
					return fmt.Errorf("device %q: address %q: %w", k, a.IP, err)
				}
				a.ip = ip
			}
			d.heapIdx = -1
			i.devs[d.ID] = d
			i.byKey[d.Key] = d
			i.docs.add(d)
			return nil
		})
		if err != nil {
			i.reset()
			return fmt.Errorf("inventory: load: %w", err)
		}
	}
	if err := i.loadRules(tx.Bucket([]byte(bucketMeta))); err != nil {
		i.reset()
		return err
	}
	if b := tx.Bucket([]byte(bucketMeta)); b != nil {
		if v := b.Get(metaPresence); v != nil {
			var pm presenceMeta
			if err := json.Unmarshal(v, &pm); err != nil {
				i.reset()
				return fmt.Errorf("inventory: load presence evidence: %w", err)
			}
			i.anyDone = pm.AnyComplete
			for src, h := range pm.Sources {
				if h != nil {
					i.health[src] = h
				}
			}
			for s, t := range pm.Complete {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					continue
				}
				i.sweeps = append(i.sweeps, sweepMark{prefix: p, start: t})
			}
			slices.SortFunc(i.sweeps, func(a, b sweepMark) int { return comparePrefix(a.prefix, b.prefix) })
		}
	}
	if err := i.loadReads(tx); err != nil {
		i.reset()
		return fmt.Errorf("inventory: load plugin reads: %w", err)
	}
	if err := i.loadSweepBases(tx); err != nil {
		i.reset()
		return fmt.Errorf("inventory: load sweep bases: %w", err)
	}
	if err := i.loadMerges(tx); err != nil {
		i.reset()
		return err
	}
	for _, id := range i.sortedIDs() {
		d := i.devs[id]
		for _, a := range d.Addrs {
			if a.RetiredAt == nil {
				i.byIP[a.IP] = append(i.byIP[a.IP], d)
			}
		}
		switch {
		case d.Presence == presenceOnline && d.Overdue:
			i.overdue[d.ID] = d
		case d.Presence == presenceOnline:
			i.heap.push(d)
		}
		d.refreshDerived(i.opts.Vendor)
		i.refreshCoverage(d)
	}
	i.shareBaseStrings()
	if err := i.loadHistory(tx); err != nil {
		i.reset()
		return fmt.Errorf("inventory: load history: %w", err)
	}
	return nil
}

// appendFillPercent is how full the commit packs the pages of buckets
// written in key order.
const appendFillPercent = 0.95

// Flush writes the rows of every device changed since the last flush.
// The runner calls it once per batch, in the batch's transaction, after
// the last Apply and before the checkpoint moves.
func (i *Inventory) Flush(tx *bolt.Tx) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	// The logs are keyed by time and seq, so rows are appended at the
	// end: pack their pages nearly full when the commit writes them
	// (the default splits every page half full).
	for _, name := range [...]string{bucketChanges, bucketChangesByTime} {
		if lb := tx.Bucket([]byte(name)); lb != nil {
			lb.FillPercent = appendFillPercent
		}
	}
	b := tx.Bucket([]byte(bucketDevices))
	if b == nil {
		return fmt.Errorf("inventory: flush: bucket %q missing", bucketDevices)
	}
	for _, id := range sortedKeys(i.deleted) {
		if err := b.Delete([]byte(id)); err != nil {
			return fmt.Errorf("inventory: flush: delete device %s: %w", id, err)
		}
	}
	// The rows share one growing buffer: each keeps the array it was
	// written in (bbolt holds them until the commit).
	rows := make([]byte, 0, 1024*len(i.dirty))
	for _, id := range sortedKeys(i.dirty) {
		start := len(rows)
		var err error
		if rows, err = encodeDeviceRow(i.dirty[id], rows); err != nil {
			return fmt.Errorf("inventory: flush: encode device %s: %w", id, err)
		}
		v := rows[start:len(rows):len(rows)]
		if err := b.Put([]byte(id), v); err != nil {
			return fmt.Errorf("inventory: flush: put device %s: %w", id, err)
		}
	}
	if i.metaDirty {
		pm := presenceMeta{Complete: make(map[string]time.Time, len(i.sweeps)), AnyComplete: i.anyDone, Sources: i.health}
		for _, m := range i.sweeps {
			pm.Complete[m.prefix.String()] = m.start
		}
		v, err := json.Marshal(pm)
		if err != nil {
			return fmt.Errorf("inventory: flush: encode presence evidence: %w", err)
		}
		mb := tx.Bucket([]byte(bucketMeta))
		if mb == nil {
			return fmt.Errorf("inventory: flush: bucket %q missing", bucketMeta)
		}
		if err := mb.Put(metaPresence, v); err != nil {
			return fmt.Errorf("inventory: flush: put presence evidence: %w", err)
		}
	}
	if i.hist.lastDirty {
		mb := tx.Bucket([]byte(bucketMeta))
		if mb == nil {
			return fmt.Errorf("inventory: flush: bucket %q missing", bucketMeta)
		}
		if err := mb.Put(metaHistLast, timeKey(i.hist.last)); err != nil {
			return fmt.Errorf("inventory: flush: put history time: %w", err)
		}
	}
	if err := i.flushRules(tx); err != nil {
		return err
	}
	if err := i.flushReads(tx); err != nil {
		return err
	}
	if err := i.flushSweepBases(tx); err != nil {
		return err
	}
	i.hist.lastDirty = false
	clear(i.dirty)
	clear(i.deleted)
	i.metaDirty = false
	return nil
}

// Apply folds one event into the projection inside the runner's
// transaction. It is deterministic: it reads only the event and the
// projection's state, never the clock. Kinds it does not know are
// skipped.
func (i *Inventory) Apply(tx *bolt.Tx, ev events.Envelope) error {
	p, err := i.Prepare(ev)
	if err != nil {
		return err
	}
	return i.ApplyPrepared(tx, ev, p)
}

// Prepare decodes the payload of an event this projection reads (nil for
// the others). It only reads ev, so the runner calls it ahead of Apply,
// on other goroutines.
func (i *Inventory) Prepare(ev events.Envelope) (any, error) {
	var p any
	switch ev.Kind {
	case events.KindSweepCompleted:
		p = &events.SweepCompleted{}
	case events.KindPortScanCompleted:
		p = &events.PortScanCompleted{}
	case events.KindDeviceEdited:
		p = &events.DeviceEdited{}
	case events.KindDeviceWatchSet:
		p = &events.DeviceWatchSet{}
	case events.KindDeviceMerged:
		p = &events.DeviceMerged{}
	case events.KindDeviceUnmerged:
		p = &events.DeviceUnmerged{}
	case events.KindClockTicked:
		p = &events.ClockTicked{}
	case events.KindPresenceRulesSet:
		p = &events.PresenceRulesSet{}
	case events.KindRetentionPurged:
		p = &events.RetentionPurged{}
	case events.KindScanFailed:
		p = &events.ScanFailed{}
	case events.KindPluginRead:
		p = &events.PluginRead{}
	case events.KindDNSRead:
		p = &dnsReadHead{}
	default:
		return nil, nil
	}
	if err := i.reg.DecodeInto(ev, p); err != nil {
		return nil, fmt.Errorf("inventory: seq %d: %w", ev.Seq, err)
	}
	if r, ok := prepareRun(ev, p); ok {
		return r, nil
	}
	if v, ok := p.(*dnsReadHead); ok {
		return prepareDNSRead(ev, v), nil
	}
	return p, nil
}

// prepareRun prepares a decoded sweep, port scan or plugin read (false
// for another payload).
func prepareRun(ev events.Envelope, p any) (any, bool) {
	switch v := p.(type) {
	case *events.SweepCompleted:
		return prepareSweepPayload(ev, v), true
	case *events.PortScanCompleted:
		return preparePortScan(ev, v), true
	case *events.PluginRead:
		return prepareRead(ev, v), true
	}
	return nil, false
}

// SharedPayload implements runner.SharedPreparer: sweeps, port scans
// and plugin reads are prepared from the payload the runner decodes once
// for the scan log too.
func (i *Inventory) SharedPayload(kind string) (*events.Registry, bool) {
	switch kind {
	case events.KindSweepCompleted, events.KindPortScanCompleted, events.KindPluginRead:
		return i.reg, true
	}
	return nil, false
}

// PrepareShared implements runner.SharedPreparer: Prepare of a run whose
// payload is decoded. The preparations only read it (a read's hosts are
// normalised as copies; a sweep written whole is kept by keepSweepBase as
// the next one's base, which nothing changes).
func (i *Inventory) PrepareShared(ev events.Envelope, payload any) (any, error) {
	if r, ok := prepareRun(ev, payload); ok {
		return r, nil
	}
	return nil, fmt.Errorf("inventory: seq %d: shared payload of type %T", ev.Seq, payload)
}

// prepareSweepPayload prepares a decoded sweep: a difference is resolved
// at apply (it needs the previous sweep).
func prepareSweepPayload(ev events.Envelope, v *events.SweepCompleted) any {
	if v.Base != 0 {
		return &deltaPrep{p: v}
	}
	return prepareSweep(ev, v)
}

// ApplyPrepared is Apply with the payload Prepare returned.
func (i *Inventory) ApplyPrepared(tx *bolt.Tx, ev events.Envelope, prepared any) error {
	if prepared == nil {
		i.mu.Lock()
		i.hist.sawTime(ev.Time) // at.go: the clock of the history rows
		i.mu.Unlock()
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	em := &emitter{tx: tx, ev: ev}
	var err error
	switch p := prepared.(type) {
	case *sweepPrep:
		i.keepSweepBase(ev.Source, ev.Seq, p.payload.Hosts)
		err = i.applySweep(em, p)
	case *deltaPrep:
		whole := i.resolveSweep(ev.Source, p.p)
		i.keepSweepBase(ev.Source, ev.Seq, whole.Hosts)
		err = i.applySweep(em, prepareSweep(ev, whole))
	case *portPrep:
		err = i.applyPortScan(em, p)
	case *events.DeviceEdited:
		err = i.applyEdit(em, p)
	case *events.DeviceWatchSet:
		err = i.applyWatch(em, p)
	case *events.DeviceMerged:
		err = i.applyMerge(em, p)
	case *events.DeviceUnmerged:
		err = i.applyUnmerge(em, p)
	case *events.ClockTicked:
		at := p.At
		if at.IsZero() {
			at = ev.Time
		}
		err = i.evaluate(em, at.UTC(), false)
	case *events.PresenceRulesSet:
		err = i.applyRules(em, p)
	case *events.RetentionPurged:
		if err = i.applyPurge(em, p); err == nil {
			err = i.dropPurgedMerges(em)
		}
	case *events.ScanFailed:
		i.sourceFailing(ev.Source, p.Kind, p.Finished.UTC(), p.Reason)
	case *readPrep:
		err = i.applyRead(em, p)
	case *dnsReadPrep:
		err = i.applyDNSRead(em, p)
	default:
		err = fmt.Errorf("prepared payload of type %T", prepared)
	}
	if err == nil {
		err = i.emitSourceChanges(em)
	}
	if err == nil {
		err = i.recordHistory(em, prepared)
	}
	i.sourceChanges = i.sourceChanges[:0]
	i.normalizeTop() // for NextPresenceDeadline
	i.version++
	if err != nil {
		return fmt.Errorf("inventory: apply seq %d %s: %w", ev.Seq, ev.Kind, err)
	}
	return nil
}

// markDirty queues d's row for the next Flush.
func (i *Inventory) markDirty(d *device) {
	i.dirty[d.ID] = d
	i.hist.touch(d)
	delete(i.deleted, d.ID)
}

// sortedIDs returns every device id in order.
func (i *Inventory) sortedIDs() []string {
	return sortedKeys(i.devs)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// currentHolder returns the device that most recently answered at ip
// among those holding it unretired, or nil.
func (i *Inventory) currentHolder(ip string) *device {
	var best *device
	var bestSeen time.Time
	for _, d := range i.byIP[ip] {
		a := d.addr(ip)
		if a == nil || a.RetiredAt != nil {
			continue
		}
		if best == nil || a.LastSeen.After(bestSeen) || (a.LastSeen.Equal(bestSeen) && d.ID < best.ID) {
			best, bestSeen = d, a.LastSeen
		}
	}
	return best
}

// holdIP records d as a holder of ip.
func (i *Inventory) holdIP(ip string, d *device) {
	if !slices.Contains(i.byIP[ip], d) {
		i.byIP[ip] = append(i.byIP[ip], d)
	}
}

// releaseIP removes d from the holders of ip.
func (i *Inventory) releaseIP(ip string, d *device) {
	hs := slices.DeleteFunc(i.byIP[ip], func(x *device) bool { return x == d })
	if len(hs) == 0 {
		delete(i.byIP, ip)
	} else {
		i.byIP[ip] = hs
	}
}
