package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/bus"
	"github.com/jocasta/jocasta/events/ingest"
	"github.com/jocasta/jocasta/store"
)

// Buckets the central owns in the service's database.
var (
	// bSeen: observation id (16 bytes) → seq (8) and when it was
	// appended (8, Unix seconds).
	bSeen = []byte("remote.seen")
	// bSeenTime: Unix seconds (8) and id (16) → nothing, to forget old ids in order.
	bSeenTime = []byte("remote.seen_time")
	// bSensors: sensor name → its state (JSON sensorState).
	bSensors = []byte("remote.sensors")
)

// Consumer is the durable JetStream consumer the central reads with.
const Consumer = "jocasta-central"

// Log is the part of the store the central needs (store.Store).
type Log interface {
	AppendFunc(ctx context.Context, decide func(tx *bolt.Tx) ([]events.Envelope, error)) ([]events.Envelope, error)
	Scan(ctx context.Context, from uint64, fn func(events.Envelope) error) error
}

// Outcome is what became of one message, for metrics.
type Outcome struct {
	// Sensor is the sensor's name; "" for a name not allowed.
	Sensor string
	// Result is appended, duplicate, refused or failed (not appended;
	// JetStream redelivers it).
	Result string
	// Delay is from the sensor's publish to the commit, and Observed
	// from the observation's own time (a sweep's end) to the commit;
	// both only for appended.
	Delay, Observed time.Duration
}

// CentralOptions configure a Central.
type CentralOptions struct {
	// Allowed lists the sensor names whose messages are appended; others
	// are refused and logged.
	Allowed []string
	Log     zerolog.Logger
	Now     func() time.Time
	// SilenceAfter is how many of a sensor's intervals without a message
	// make it silent (default 3). DefaultInterval is the interval of a
	// sensor that sends none (default 5m). CheckEvery is how often
	// silence is looked for (default 1s).
	SilenceAfter    int
	DefaultInterval time.Duration
	CheckEvery      time.Duration
	// ForgetAfter is how long an appended id is remembered (default 7 days).
	ForgetAfter time.Duration
	// AckWait is how long JetStream waits for the central's ack before it
	// redelivers (default 30s).
	AckWait time.Duration
	// Observe, when set, is called for every message.
	Observe func(Outcome)
}

// Contact is what the central knows of one sensor.
type Contact struct {
	Sensor string
	// Last is when its newest message arrived (zero: never).
	Last     time.Time
	Interval time.Duration
	// SilentSince is set while it is silent.
	SilentSince *time.Time
	Sources     []string
}

// sensorState is the stored state of one sensor.
type sensorState struct {
	Last        time.Time         `json:"last"`
	IntervalS   int64             `json:"interval_s,omitempty"`
	Sources     map[string]string `json:"sources,omitempty"` // source → kind
	SilentSince *time.Time        `json:"silent_since,omitempty"`
}

func (s *sensorState) clone() *sensorState {
	c := *s
	c.Sources = maps.Clone(s.Sources)
	return &c
}

// Central consumes the sensors' stream and appends each observation once.
type Central struct {
	log     Log
	opts    CentralOptions
	allowed map[string]bool
	started time.Time

	// appendMu serialises the central's appends (messages and silence),
	// so that state is only changed by one at a time.
	appendMu sync.Mutex
	mu       sync.Mutex
	state    map[string]*sensorState
	warned   map[string]time.Time // refused sensor names, last logged
	// sweeps is, per appended source, the last sweep the central
	// appended (under appendMu): the base the next one is written
	// against, as the local sink does.
	sweeps map[string]*sweepBase
	// reads is, per appended source, the host set its last appended
	// plugin read left (under appendMu): the base the next read is
	// written against, as the local sink does.
	reads map[string]*ingest.ReadBase
}

// sweepBase is a source's last appended sweep: its seq and responders
// in address order.
type sweepBase struct {
	seq   uint64
	hosts []events.SweepHost
	byIP  map[string]int
}

// NewCentral returns a central appending to log.
func NewCentral(log Log, opts CentralOptions) *Central {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SilenceAfter <= 0 {
		opts.SilenceAfter = 3
	}
	if opts.DefaultInterval <= 0 {
		opts.DefaultInterval = 5 * time.Minute
	}
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = time.Second
	}
	if opts.ForgetAfter <= 0 {
		opts.ForgetAfter = 7 * 24 * time.Hour
	}
	if opts.AckWait <= 0 {
		opts.AckWait = 30 * time.Second
	}
	c := &Central{log: log, opts: opts, allowed: map[string]bool{}, state: map[string]*sensorState{}, warned: map[string]time.Time{}, sweeps: map[string]*sweepBase{},
		reads: map[string]*ingest.ReadBase{}}
	for _, n := range opts.Allowed {
		c.allowed[n] = true
	}
	return c
}

// Init creates the central's buckets, loads the sensors' state and, when
// the index of appended ids is missing (a new database, or one rebuilt
// from its log), rebuilds it from the log's sensor events.
func (c *Central) Init(ctx context.Context) error {
	var missing bool
	var loaded map[string]*sensorState
	_, err := c.log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
		missing = tx.Bucket(bSeen) == nil
		loaded = map[string]*sensorState{}
		for _, b := range [][]byte{bSeen, bSeenTime, bSensors} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return nil, err
			}
		}
		return nil, tx.Bucket(bSensors).ForEach(func(k, v []byte) error {
			var st sensorState
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("sensor %s: %w", k, err)
			}
			loaded[string(k)] = &st
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("remote: init: %w", err)
	}
	c.mu.Lock()
	c.state = loaded
	c.started = c.opts.Now()
	c.mu.Unlock()
	if missing {
		return c.reindex(ctx)
	}
	return nil
}

// reindex writes the ids of the log's sensor events into the index.
func (c *Central) reindex(ctx context.Context) error {
	type seen struct {
		id  []byte
		seq uint64
	}
	var batch []seen
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		now := c.opts.Now()
		_, err := c.log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
			for _, s := range batch {
				if err := putSeen(tx, s.id, s.seq, now); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		n += len(batch)
		batch = batch[:0]
		return err
	}
	err := c.log.Scan(ctx, 1, func(e events.Envelope) error {
		if !strings.HasPrefix(e.Source, "sensor:") {
			return nil
		}
		id, err := hex.DecodeString(e.ID)
		if err != nil || len(id) != 16 {
			return nil
		}
		batch = append(batch, seen{id: id, seq: e.Seq})
		if len(batch) >= 10000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("remote: rebuild the index of sensor observations: %w", err)
	}
	if n > 0 {
		c.opts.Log.Info().Int("observations", n).Msg("rebuilt the index of sensor observations from the log")
	}
	return nil
}

func putSeen(tx *bolt.Tx, id []byte, seq uint64, at time.Time) error {
	var v [16]byte
	binary.BigEndian.PutUint64(v[:8], seq)
	binary.BigEndian.PutUint64(v[8:], uint64(at.Unix()))
	if err := tx.Bucket(bSeen).Put(id, v[:]); err != nil {
		return err
	}
	k := make([]byte, 0, 24)
	k = binary.BigEndian.AppendUint64(k, uint64(at.Unix()))
	k = append(k, id...)
	return tx.Bucket(bSeenTime).Put(k, nil)
}

// SeenSeq returns the seq the observation id was appended at, if the
// central remembers it.
func SeenSeq(tx *bolt.Tx, id string) (uint64, bool) {
	b := tx.Bucket(bSeen)
	idb, err := hex.DecodeString(id)
	if b == nil || err != nil {
		return 0, false
	}
	v := b.Get(idb)
	if len(v) != 16 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v[:8]), true
}

// observationKinds are the event kinds a sensor may send.
var observationKinds = map[string]bool{
	events.KindSweepCompleted:    true,
	events.KindPortScanCompleted: true,
	events.KindPluginRead:        true,
	events.KindScanFailed:        true,
	events.KindTrafficRecorded:   true,
	events.KindDNSRead:           true,
}

// SourceFor is the source the central appends a sensor's event under:
// "sensor:<name>" for its sweeps and port scans (which share a source,
// as the local ones do), "sensor:<name>/<source>" for its plugins.
func SourceFor(sensor, kind, source string) string {
	if kind == "sweep" || kind == "portscan" {
		return "sensor:" + sensor
	}
	return "sensor:" + sensor + "/" + source
}

// check refuses what the central never appends, and rewrites the source.
func (c *Central) check(o *Observation) error {
	if !c.allowed[o.Sensor] {
		return fmt.Errorf("remote: %w: sensor %q is not in sensors.names", ErrRefused, o.Sensor)
	}
	e := &o.Event
	if !observationKinds[e.Kind] {
		return fmt.Errorf("remote: %w: from %s: a sensor does not send %q", ErrRefused, o.Sensor, e.Kind)
	}
	if spec, ok := events.Lookup(e.Kind); !ok || e.V < 1 || e.V > spec.Version {
		return fmt.Errorf("remote: %w: from %s: %s v%d is unknown to this build", ErrRefused, o.Sensor, e.Kind, e.V)
	}
	if !plainText(o.Kind, 64) || !plainText(e.Source, 128) || !plainText(e.Stream, 200) {
		return fmt.Errorf("remote: %w: from %s: bad kind, source or stream", ErrRefused, o.Sensor)
	}
	// That a sweep or a plugin read is whole (no base) is checked where it
	// is decoded to be written as a difference (sweepDelta, readDelta).
	if !json.Valid(e.Payload) {
		return fmt.Errorf("remote: %w: from %s: payload is not JSON", ErrRefused, o.Sensor)
	}
	e.Source = SourceFor(o.Sensor, o.Kind, e.Source)
	e.Actor, e.Device, e.Seq, e.PrevHash, e.Hash = e.Source, "", 0, "", ""
	return nil
}

func plainText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// Handle appends one observation unless it was appended before, and
// reports whether it was a duplicate. Every error but ErrRefused means
// the message should be delivered again.
func (c *Central) Handle(ctx context.Context, o Observation) (dup bool, err error) {
	if err := c.check(&o); err != nil {
		return false, err
	}
	c.appendMu.Lock()
	defer c.appendMu.Unlock()
	now := c.opts.Now()
	c.mu.Lock()
	prev := c.state[o.Sensor]
	c.mu.Unlock()
	next := &sensorState{Sources: map[string]string{}}
	if prev != nil {
		next = prev.clone()
		if next.Sources == nil {
			next.Sources = map[string]string{}
		}
	}
	wasSilent := next.SilentSince
	next.Last, next.SilentSince = now, nil
	if o.Interval > 0 {
		next.IntervalS = int64(o.Interval / time.Second)
	}
	// The sweep's kind wins for the source it shares with the port scan:
	// the inventory treats a sweep source's health differently.
	if k := next.Sources[o.Event.Source]; k != "sweep" {
		next.Sources[o.Event.Source] = o.Kind
	}
	stateJSON, err := json.Marshal(next)
	if err != nil {
		return false, err
	}
	id, err := hex.DecodeString(o.Event.ID)
	if err != nil || len(id) != 16 {
		return false, fmt.Errorf("remote: %w: observation id %q", ErrRefused, o.Event.ID)
	}
	ev, all, err := c.sweepDelta(o.Event)
	if err != nil {
		return false, err
	}
	ev, read, err := c.readDelta(ev)
	if err != nil {
		return false, err
	}
	var seq uint64
	_, err = c.log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
		dup = false
		if err := tx.Bucket(bSensors).Put([]byte(o.Sensor), stateJSON); err != nil {
			return nil, err
		}
		if tx.Bucket(bSeen).Get(id) != nil {
			dup = true
			return nil, nil
		}
		seq = store.HeadTx(tx) + 1
		if err := putSeen(tx, id, seq, now); err != nil {
			return nil, err
		}
		return []events.Envelope{ev}, nil
	})
	if err != nil {
		if all != nil {
			delete(c.sweeps, ev.Source) // the next sweep is written whole
		}
		if read != nil {
			delete(c.reads, ev.Source) // the next read is written whole
		}
		return false, fmt.Errorf("remote: append %s from %s: %w", o.Event.ID, o.Sensor, err)
	}
	if all != nil && !dup {
		next := &sweepBase{seq: seq, hosts: all, byIP: make(map[string]int, len(all))}
		for i := range all {
			next.byIP[all[i].IP] = i
		}
		c.sweeps[ev.Source] = next
	}
	if read != nil {
		if dup {
			// Appended before, in a life whose base this one may not
			// share: the next read is written whole.
			delete(c.reads, ev.Source)
		} else {
			read.Seq = seq
			c.reads[ev.Source] = read
		}
	}
	c.mu.Lock()
	c.state[o.Sensor] = next
	c.mu.Unlock()
	if wasSilent != nil {
		c.opts.Log.Info().Str("sensor", o.Sensor).Time("silent_since", *wasSilent).Msg("sensor heard again")
	}
	return dup, nil
}

// sweepDelta writes a sensor's whole sweep against the source's last
// appended one, as the local sink does (events.SweepCompleted's Base and
// Same): a stable site then costs a few bytes per host and sweep in the
// log instead of a whole record. It returns the event to append and,
// for a sweep, its responders in address order (the next base); other
// events are returned as they are. The first sweep of each source after
// a start is written whole. The event keeps its id and time.
func (c *Central) sweepDelta(e events.Envelope) (events.Envelope, []events.SweepHost, error) {
	if e.Kind != events.KindSweepCompleted {
		return e, nil, nil
	}
	spec, _ := events.Lookup(e.Kind)
	var p events.SweepCompleted
	if err := events.Default.DecodeInto(e, &p); err != nil {
		return e, nil, fmt.Errorf("remote: %w: sweep %s: %w", ErrRefused, e.ID, err)
	}
	if p.Base != 0 || len(p.Same) != 0 {
		return e, nil, fmt.Errorf("remote: %w: sweep %s must be whole (no base)", ErrRefused, e.ID)
	}
	all := slices.Clone(p.Hosts)
	events.SortSweepHosts(all)
	base := c.sweeps[e.Source]
	if base == nil || e.V != spec.Version {
		// Whole: the inventory takes its hosts, in the payload's order,
		// as the base of the next one, so they must be in address order
		// (the sensor's ingest.SweepEvent sorts them; a sensor that did
		// not is rewritten).
		if slices.EqualFunc(all, p.Hosts, func(a, b events.SweepHost) bool { return a.IP == b.IP }) {
			return e, all, nil
		}
		base = nil
	}
	d := p
	d.Base, d.Hosts, d.Same = 0, all, nil
	if base != nil {
		d.Base, d.Hosts = base.seq, []events.SweepHost{}
	}
	for k := 0; base != nil && k < len(all); k++ {
		h := &all[k]
		if i, ok := base.byIP[h.IP]; ok && events.SameResponder(&base.hosts[i], h) {
			d.Same = append(d.Same, int64(i), h.RTTMicros)
			continue
		}
		d.Hosts = append(d.Hosts, *h)
	}
	out, err := events.New(events.KindSweepCompleted, d, e.Time)
	if err != nil {
		return e, nil, fmt.Errorf("remote: sweep %s: %w", e.ID, err)
	}
	out.ID, out.Source, out.Actor, out.Stream = e.ID, e.Source, e.Actor, e.Stream
	return out, all, nil
}

// readDelta writes a sensor's whole plugin read as the difference from
// the source's last appended one, as the local sink does (ingest.ReadDelta:
// events.PluginRead's Base, Set and Gone): a stable router at a remote
// site then costs a few bytes per read in the log instead of every host
// it knows. It returns the event to append and, for a read, the base it
// leaves; other events are returned as they are. The first read of each
// source after a start is written whole. The event keeps its id and time.
func (c *Central) readDelta(e events.Envelope) (events.Envelope, *ingest.ReadBase, error) {
	if e.Kind != events.KindPluginRead {
		return e, nil, nil
	}
	var whole events.PluginRead
	if err := events.Default.DecodeInto(e, &whole); err != nil {
		return e, nil, fmt.Errorf("remote: %w: read %s: %w", ErrRefused, e.ID, err)
	}
	if whole.Base != 0 || len(whole.Gone) != 0 {
		return e, nil, fmt.Errorf("remote: %w: read %s must be whole (no base, nothing gone)", ErrRefused, e.ID)
	}
	if spec, _ := events.Lookup(e.Kind); e.V != spec.Version {
		return e, nil, nil // written as it came; the next read is whole
	}
	p, next := ingest.ReadDelta(whole, c.reads[e.Source])
	out, err := events.New(events.KindPluginRead, p, e.Time)
	if err != nil {
		return e, nil, fmt.Errorf("remote: read %s: %w", e.ID, err)
	}
	out.ID, out.Source, out.Actor, out.Stream = e.ID, e.Source, e.Actor, e.Stream
	return out, next, nil
}

// Contacts lists what the central knows of each allowed sensor, by name.
func (c *Central) Contacts() []Contact {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := slices.Sorted(maps.Keys(c.allowed))
	out := make([]Contact, 0, len(names))
	for _, n := range names {
		ct := Contact{Sensor: n}
		if st := c.state[n]; st != nil {
			ct.Last, ct.Interval, ct.SilentSince = st.Last, time.Duration(st.IntervalS)*time.Second, st.SilentSince
			ct.Sources = slices.Sorted(maps.Keys(st.Sources))
		}
		out = append(out, ct)
	}
	return out
}

// CheckSilence appends, for each sensor not heard from for SilenceAfter
// of its intervals (counted from the central's start at the earliest), a
// scan.failed for each of its sources, once per silence.
func (c *Central) CheckSilence(ctx context.Context) error {
	c.appendMu.Lock()
	defer c.appendMu.Unlock()
	now := c.opts.Now()
	c.mu.Lock()
	type due struct {
		name string
		st   *sensorState
	}
	var dues []due
	for name, st := range c.state {
		if st.SilentSince != nil || len(st.Sources) == 0 || !c.allowed[name] {
			continue
		}
		iv := time.Duration(st.IntervalS) * time.Second
		if iv <= 0 {
			iv = c.opts.DefaultInterval
		}
		last := st.Last
		if c.started.After(last) {
			last = c.started
		}
		if now.Sub(last) > time.Duration(c.opts.SilenceAfter)*iv {
			dues = append(dues, due{name, st.clone()})
		}
	}
	c.mu.Unlock()
	slices.SortFunc(dues, func(a, b due) int { return strings.Compare(a.name, b.name) })
	var errs []error
	for _, d := range dues {
		iv := time.Duration(d.st.IntervalS) * time.Second
		if iv <= 0 {
			iv = c.opts.DefaultInterval
		}
		last := "never since this start"
		if !d.st.Last.IsZero() {
			last = d.st.Last.UTC().Format(time.RFC3339)
		}
		reason := fmt.Sprintf("sensor %s silent: last contact %s, nothing for %d × its interval %s", d.name, last, c.opts.SilenceAfter, iv)
		var evs []events.Envelope
		for _, src := range slices.Sorted(maps.Keys(d.st.Sources)) {
			id := fmt.Sprintf("%s@%d", src, now.UnixNano())
			started := d.st.Last
			if started.IsZero() || started.After(now) {
				started = now
			}
			e, err := events.New(events.KindScanFailed, events.ScanFailed{ScanID: id, Kind: d.st.Sources[src], Started: started.UTC(), Finished: now.UTC(), Reason: reason}, now)
			if err != nil {
				return err
			}
			e.Source, e.Actor, e.Stream = src, src, "scan/"+id
			evs = append(evs, e)
		}
		next := d.st
		t := now.UTC()
		next.SilentSince = &t
		b, err := json.Marshal(next)
		if err != nil {
			return err
		}
		_, err = c.log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
			return evs, tx.Bucket(bSensors).Put([]byte(d.name), b)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("remote: record the silence of %s: %w", d.name, err))
			continue
		}
		c.mu.Lock()
		c.state[d.name] = next
		c.mu.Unlock()
		c.opts.Log.Warn().Str("sensor", d.name).Str("last_contact", last).Str("interval", iv.String()).Int("sources", len(evs)).
			Msg("sensor silent: its sources are recorded as failing (their devices are not covered, never offline)")
	}
	return errors.Join(errs...)
}

// Forget removes the ids appended before the ForgetAfter window, at
// most limit of them per call, and reports how many it removed.
func (c *Central) Forget(ctx context.Context, limit int) (int, error) {
	cut := uint64(c.opts.Now().Add(-c.opts.ForgetAfter).Unix())
	n := 0
	_, err := c.log.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
		n = 0
		var keys [][]byte
		cur := tx.Bucket(bSeenTime).Cursor()
		for k, _ := cur.First(); k != nil && len(keys) < limit; k, _ = cur.Next() {
			if len(k) != 24 || binary.BigEndian.Uint64(k[:8]) >= cut {
				break
			}
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := tx.Bucket(bSeenTime).Delete(k); err != nil {
				return nil, err
			}
			if err := tx.Bucket(bSeen).Delete(k[8:]); err != nil {
				return nil, err
			}
		}
		n = len(keys)
		return nil, nil
	})
	if err != nil {
		return 0, fmt.Errorf("remote: forget old observation ids: %w", err)
	}
	return n, nil
}

// StreamConfig is the stream the central creates: the sensors' subject,
// kept on disk until the central acknowledges each message (work
// queue), with a 10-minute window of de-duplication by Nats-Msg-Id.
func StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       Topic,
		Subjects:   []string{Topic + ".*"},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.WorkQueuePolicy,
		Duplicates: 10 * time.Minute,
	}
}

// Run consumes the stream on nc until ctx is done: it creates the stream
// (retrying while the server cannot be reached), then appends each
// message, acks it after the commit, and watches for silent sensors.
// Init must have been called. Run closes nc when it returns.
func (c *Central) Run(ctx context.Context, nc *nats.Conn) error {
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("remote: jetstream: %w", err)
	}
	wait := 500 * time.Millisecond
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = js.CreateOrUpdateStream(sctx, StreamConfig())
		cancel()
		if err == nil {
			break
		}
		c.opts.Log.Warn().Str("reason", err.Error()).Msg("cannot create the sensors' stream yet; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
	ackWait := c.opts.AckWait
	sub, err := wmjs.NewSubscriber(wmjs.SubscriberConfig{
		Conn:           nc,
		Logger:         bus.NewLogger(c.opts.Log),
		AckWaitTimeout: ackWait,
		NakDelay:       wmjs.NewStaticDelay(time.Second),
		ResourceInitializer: func(ctx context.Context, js jetstream.JetStream, topic string) (jetstream.Consumer, func(context.Context, watermill.LoggerAdapter), error) {
			cons, err := js.CreateOrUpdateConsumer(ctx, topic, jetstream.ConsumerConfig{
				Durable:       Consumer,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       ackWait,
				MaxAckPending: 64,
			})
			return cons, nil, err
		},
		ConsumeOptions: []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(32)},
		Unmarshaler:    unmarshaler{},
	})
	if err != nil {
		return fmt.Errorf("remote: subscriber: %w", err)
	}
	defer sub.Close()
	msgs, err := sub.Subscribe(ctx, Topic)
	if err != nil {
		return fmt.Errorf("remote: subscribe: %w", err)
	}
	c.opts.Log.Info().Strs("sensors", c.opts.Allowed).Msg("consuming the sensors' stream")
	var wg sync.WaitGroup
	wg.Go(func() { c.watch(ctx) })
	for m := range msgs {
		c.consume(ctx, m)
	}
	wg.Wait()
	return nil
}

// unmarshaler turns a JetStream message into a watermill one, as
// watermill's DefaultUnmarshaler does, but never fails (that one's error,
// for a header sent twice, would crash its subscriber: a sender must not
// be able to stop the central), and records the subject the message
// arrived on (HeaderSubject), replacing any header of that name.
type unmarshaler struct{}

func (unmarshaler) Unmarshal(msg jetstream.Msg) (*message.Message, error) {
	hdr := msg.Headers()
	md := make(message.Metadata, len(hdr)+1)
	for k, v := range hdr {
		switch k {
		case wmnats.WatermillUUIDHdr, nats.MsgIdHdr, nats.ExpectedLastMsgIdHdr, nats.ExpectedStreamHdr, nats.ExpectedLastSubjSeqHdr, nats.ExpectedLastSeqHdr:
			continue
		}
		if len(v) > 0 {
			md.Set(k, v[0])
		}
	}
	md.Set(HeaderSubject, msg.Subject())
	wm := message.NewMessage(hdr.Get(wmnats.WatermillUUIDHdr), msg.Data())
	wm.Metadata = md
	return wm, nil
}

// watch runs CheckSilence and Forget until ctx is done.
func (c *Central) watch(ctx context.Context) {
	tick := time.NewTicker(c.opts.CheckEvery)
	defer tick.Stop()
	lastForget := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := c.CheckSilence(ctx); err != nil && ctx.Err() == nil {
			c.opts.Log.Error().Err(err).Msg("could not record a silent sensor")
		}
		if time.Since(lastForget) > time.Hour {
			lastForget = time.Now()
			if n, err := c.Forget(ctx, 100000); err != nil && ctx.Err() == nil {
				c.opts.Log.Error().Err(err).Msg("could not forget old observation ids")
			} else if n > 0 {
				c.opts.Log.Debug().Int("ids", n).Msg("forgot old observation ids")
			}
		}
	}
}

// consume handles one message: ack after the commit (or for a message
// refused for good), nack to have it delivered again.
func (c *Central) consume(ctx context.Context, m *message.Message) {
	o, err := Decode(m)
	dup := false
	if err == nil {
		dup, err = c.Handle(ctx, o)
	}
	out := Outcome{Sensor: o.Sensor}
	if !c.allowed[o.Sensor] {
		out.Sensor = "" // not a label per name a stranger chooses
	}
	switch {
	case errors.Is(err, ErrRefused):
		out.Result = "refused"
		c.warnRefused(o.Sensor, err)
		m.Ack()
	case err != nil:
		out.Result = "failed"
		if ctx.Err() == nil {
			c.opts.Log.Error().Err(err).Str("sensor", o.Sensor).Msg("could not append a sensor's observation; it will be delivered again")
		}
		m.Nack()
	case dup:
		out.Result = "duplicate"
		c.opts.Log.Debug().Str("sensor", o.Sensor).Str("observation", o.Event.ID).Msg("duplicate observation not appended again")
		m.Ack()
	default:
		out.Result = "appended"
		now := c.opts.Now()
		if !o.Sent.IsZero() {
			out.Delay = now.Sub(o.Sent)
		}
		out.Observed = now.Sub(o.Event.Time)
		m.Ack()
	}
	if c.opts.Observe != nil {
		c.opts.Observe(out)
	}
}

// warnRefused logs a refused message, once a minute per sensor name.
func (c *Central) warnRefused(sensor string, err error) {
	c.mu.Lock()
	last, ok := c.warned[sensor]
	now := time.Now()
	if ok && now.Sub(last) < time.Minute {
		c.mu.Unlock()
		return
	}
	if len(c.warned) > 1000 {
		clear(c.warned)
	}
	c.warned[sensor] = now
	c.mu.Unlock()
	c.opts.Log.Warn().Str("sensor", strings.ToValidUTF8(sensor, "?")).Str("reason", err.Error()).Msg("refused a sensor's message")
}
