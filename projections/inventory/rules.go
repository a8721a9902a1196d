package inventory

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// The presence and identity rules (inventory.online_window and
// inventory.address_grace) in force are part of the projection's state:
// an inventory.rules_set event sets them from its time on, and they are
// stored in the meta bucket with the presence evidence. Before the first
// such event of a log they are the configured ones (Options). So a replay
// or a rebuild under today's configuration reproduces the presence that
// was shown under yesterday's.

// metaRules is the key in bucketMeta of the recorded rules.
var metaRules = []byte("rules")

// graceOf is the AddressGrace of a recorded number of seconds: 0 (retire
// at the first complete sweep that misses the address) is a nanosecond,
// since an AddressGrace of 0 means the default.
func graceOf(seconds int64) time.Duration {
	if seconds <= 0 {
		return time.Nanosecond
	}
	return time.Duration(seconds) * time.Second
}

// graceSeconds is the inverse of graceOf.
func graceSeconds(d time.Duration) int64 {
	if d <= time.Nanosecond {
		return 0
	}
	return int64(d / time.Second)
}

// Rules are the presence rules an inventory applies.
type Rules struct {
	OnlineWindow time.Duration
	// AddressGrace is 0 when an address is retired at the first complete
	// sweep that misses it.
	AddressGrace time.Duration
	// Recorded says that they came from an inventory.rules_set event
	// (false: the configured ones, never recorded in this log).
	Recorded bool
}

// Rules returns the rules in force.
func (i *Inventory) Rules() Rules {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return Rules{OnlineWindow: i.opts.OnlineWindow, AddressGrace: time.Duration(graceSeconds(i.opts.AddressGrace)) * time.Second,
		Recorded: i.rulesRecorded}
}

// RulesEvent returns the inventory.rules_set payload that records
// window and grace (a grace of 0 retires at once), and whether it differs
// from what is in force or nothing is recorded yet: serve appends it at
// start when it does.
func (i *Inventory) RulesEvent(window, grace time.Duration) (events.PresenceRulesSet, bool) {
	p := events.PresenceRulesSet{OnlineWindowS: int64(window / time.Second), AddressGraceS: graceSeconds(grace)}
	r := i.Rules()
	differs := !r.Recorded || r.OnlineWindow != time.Duration(p.OnlineWindowS)*time.Second ||
		graceSeconds(r.AddressGrace) != p.AddressGraceS
	return p, differs
}

// loadRules sets the rules of the meta bucket (the configured ones when
// none are stored). The caller holds the write lock.
func (i *Inventory) loadRules(mb *bolt.Bucket) error {
	i.opts.OnlineWindow, i.opts.AddressGrace = i.configured.OnlineWindow, i.configured.AddressGrace
	i.rulesRecorded, i.rulesDirty = false, false
	if mb == nil {
		return nil
	}
	v := mb.Get(metaRules)
	if v == nil {
		return nil
	}
	var p events.PresenceRulesSet
	if err := json.Unmarshal(v, &p); err != nil {
		return fmt.Errorf("inventory: load rules: %w", err)
	}
	i.rulesRecorded = true
	if !i.opts.FixedRules {
		i.setRules(p)
	}
	return nil
}

// setRules puts p's valid values in force.
func (i *Inventory) setRules(p events.PresenceRulesSet) {
	if p.OnlineWindowS > 0 {
		i.opts.OnlineWindow = time.Duration(p.OnlineWindowS) * time.Second
	}
	if p.AddressGraceS >= 0 {
		i.opts.AddressGrace = graceOf(p.AddressGraceS)
	}
}

// applyRules puts an inventory.rules_set in force at the event's time:
// devices past the old window but within the new one are online and
// waiting again, and presence is evaluated at once under the new window.
// With Options.FixedRules (whatif's replay under other rules) the event
// changes nothing.
func (i *Inventory) applyRules(em *emitter, p *events.PresenceRulesSet) error {
	if i.opts.FixedRules {
		return nil
	}
	i.setRules(*p)
	i.rulesRecorded, i.rulesDirty = true, true
	at := em.ev.Time.UTC()
	cut := at.Add(-i.opts.OnlineWindow)
	for _, id := range sortedKeys(i.overdue) {
		d := i.overdue[id]
		if d.LastSeen.Before(cut) {
			continue
		}
		d.Overdue = false
		delete(i.overdue, id)
		i.heap.push(d)
		i.refreshCoverage(d)
		i.markDirty(d)
	}
	return i.evaluate(em, at, false)
}

// flushRules stores the rules in force once an event set them.
func (i *Inventory) flushRules(tx *bolt.Tx) error {
	if !i.rulesDirty {
		return nil
	}
	mb := tx.Bucket([]byte(bucketMeta))
	if mb == nil {
		return fmt.Errorf("inventory: flush: bucket %q missing", bucketMeta)
	}
	v, err := json.Marshal(events.PresenceRulesSet{OnlineWindowS: int64(i.opts.OnlineWindow / time.Second), AddressGraceS: graceSeconds(i.opts.AddressGrace)})
	if err != nil {
		return fmt.Errorf("inventory: flush: encode rules: %w", err)
	}
	if err := mb.Put(metaRules, v); err != nil {
		return fmt.Errorf("inventory: flush: put rules: %w", err)
	}
	i.rulesDirty = false
	return nil
}
