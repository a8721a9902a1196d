package inventory

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// bucketSweepBase holds, per sweep source, the responders of its last
// sweep: what the next sweep's references (SweepCompleted.Same) point
// into. Key "<source>" → the responders as JSON (round trips left out:
// references carry their own), rewritten only when a responder changed;
// key "<source>\x00seq" → the seq of that sweep.
const bucketSweepBase = "inventory.sweep_base"

// sweepBase is one source's last sweep.
type sweepBase struct {
	seq   uint64
	hosts []events.SweepHost // round trips as sent; not used
	// stored are the responders as last written to the bucket (or
	// loaded from it); moved says that seq moved since.
	stored []events.SweepHost
	moved  bool
}

// deltaPrep is a sweep written against its source's previous one, to be
// resolved at apply time (it needs that sweep's responders).
type deltaPrep struct {
	p *events.SweepCompleted
}

// resolveSweep turns a sweep written against its source's previous one
// into the whole sweep. A sweep whose base this projection does not hold
// (which the sink never writes) keeps only its whole hosts: what it says
// of the others is lost, and it is applied as incomplete, so that their
// silence is no evidence.
func (i *Inventory) resolveSweep(src string, p *events.SweepCompleted) *events.SweepCompleted {
	b := i.sweepBases[src]
	var base []events.SweepHost
	if b != nil && b.seq == p.Base {
		base = b.hosts
	}
	r := *p
	hosts, err := events.ResolveSweep(p, base)
	if err != nil {
		r.Complete = false
		r.Errors = append(append([]string(nil), p.Errors...), "this sweep's base is missing from the inventory: responders it names by reference are not applied")
		hosts = append([]events.SweepHost(nil), p.Hosts...)
		events.SortSweepHosts(hosts)
	}
	r.Hosts, r.Base, r.Same = hosts, 0, nil
	return &r
}

// keepSweepBase records a source's sweep (whole, in address order) as the
// base of its next one. The event's responders are kept as they are
// (nothing changes them once decoded); whether they differ from the
// stored ones is asked once a batch, at Flush.
func (i *Inventory) keepSweepBase(src string, seq uint64, hosts []events.SweepHost) {
	b := i.lastBase
	if b == nil || i.lastBaseSrc != src {
		if b = i.sweepBases[src]; b == nil {
			b = &sweepBase{}
			i.sweepBases[src] = b
		}
		i.lastBase, i.lastBaseSrc = b, src
	}
	b.seq, b.hosts, b.moved = seq, hosts, true
}

// sameResponders reports whether two sweeps' responders are the same,
// round trips aside.
func sameResponders(a, b []events.SweepHost) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !events.SameResponder(&a[k], &b[k]) {
			return false
		}
	}
	return true
}

func sweepSeqKey(src string) []byte { return []byte(src + "\x00seq") }

// loadSweepBases reads the sources' last sweeps.
func (i *Inventory) loadSweepBases(tx *bolt.Tx) error {
	b := tx.Bucket([]byte(bucketSweepBase))
	if b == nil {
		return nil
	}
	var in interner
	return b.ForEach(func(k, v []byte) error {
		src, isSeq := strings.CutSuffix(string(k), "\x00seq")
		sb := i.sweepBases[src]
		if sb == nil {
			sb = &sweepBase{}
			i.sweepBases[src] = sb
		}
		if isSeq {
			if len(v) != 8 {
				return fmt.Errorf("sweep base %q: seq of %d bytes", src, len(v))
			}
			sb.seq = binary.BigEndian.Uint64(v)
			return nil
		}
		var hosts []events.SweepHost
		if err := json.Unmarshal(v, &hosts); err != nil {
			return err
		}
		// Held for the life of serve (a 10,000-host sweep: 1.9 MB as
		// decoded): made at its length, and the strings every host
		// repeats (its network, how it answered) shared, as the event
		// decoder shares them in a sweep applied live.
		sb.hosts = slices.Clone(hosts)
		for k := range sb.hosts {
			in.str(&sb.hosts[k].Network)
			in.str(&sb.hosts[k].Via)
		}
		sb.stored = sb.hosts
		return nil
	})
}

// shareBaseStrings points the loaded sweep bases' addresses, MACs and
// names at the same strings of the devices that hold them, which a sweep
// applied live shares by decoding both from one event: decoded from the
// bucket, each would be a copy (about 70 bytes a responder, 0.7 MB at
// 10,000, for the life of serve). Run once the address index is built.
func (i *Inventory) shareBaseStrings() {
	for _, sb := range i.sweepBases {
		for k := range sb.hosts {
			h := &sb.hosts[k]
			ds := i.byIP[h.IP]
			if len(ds) == 0 {
				continue
			}
			d := ds[0]
			if a := d.addr(h.IP); a != nil {
				h.IP = a.IP
			}
			if h.MAC != "" && h.MAC == d.MAC {
				h.MAC = d.MAC
			}
			for n := range h.Names {
				if v, ok := d.Names.get(h.Names[n].Source); ok && v.Name == h.Names[n].Name {
					h.Names[n].Name = v.Name
				}
				if k, ok := d.Names.find(h.Names[n].Source); ok {
					h.Names[n].Source = d.Names[k].Src
				}
			}
		}
	}
}

// flushSweepBases writes the sources' last sweeps that moved: the seq,
// and the responders (without their round trips, which references
// carry) when they are not those stored.
func (i *Inventory) flushSweepBases(tx *bolt.Tx) error {
	var b *bolt.Bucket
	for _, src := range sortedKeys(i.sweepBases) {
		sb := i.sweepBases[src]
		if !sb.moved {
			continue
		}
		if b == nil {
			if b = tx.Bucket([]byte(bucketSweepBase)); b == nil {
				return fmt.Errorf("inventory: flush: bucket %q missing", bucketSweepBase)
			}
		}
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], sb.seq)
		if err := b.Put(sweepSeqKey(src), seq[:]); err != nil {
			return fmt.Errorf("inventory: flush: sweep base seq: %w", err)
		}
		if !sameResponders(sb.stored, sb.hosts) {
			hosts := make([]events.SweepHost, len(sb.hosts))
			copy(hosts, sb.hosts)
			for k := range hosts {
				hosts[k].RTTMicros = 0
			}
			v, err := json.Marshal(hosts)
			if err != nil {
				return fmt.Errorf("inventory: flush: encode sweep base: %w", err)
			}
			if err := b.Put([]byte(src), v); err != nil {
				return fmt.Errorf("inventory: flush: sweep base: %w", err)
			}
			sb.stored = sb.hosts
		}
		sb.moved = false
	}
	return nil
}
