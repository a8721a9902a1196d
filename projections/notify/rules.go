package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// Names of the rules projection: its consumer name and its bucket
// (destination name → the JSON of a RuleSet).
const (
	RulesName   = "notify_rules"
	BucketRules = "notify_rules"
)

// RuleSet is a destination's selection as last set.
type RuleSet struct {
	Rules []Rule `json:"rules"`
	// Actor and Time say who set it and when; Seq is the event's seq.
	Actor string    `json:"actor"`
	Time  time.Time `json:"time"`
	Seq   uint64    `json:"seq"`
}

// Rules is the projection of notify.rules_set events: each destination's
// selection. It is a runner.Projection; queries are safe for concurrent
// use.
type Rules struct {
	mu  sync.RWMutex
	set map[string]RuleSet
}

// NewRules returns an empty rules projection.
func NewRules() *Rules { return &Rules{set: map[string]RuleSet{}} }

// Name is the projection's consumer name.
func (r *Rules) Name() string { return RulesName }

// Version of the rows.
func (r *Rules) Version() int { return 1 }

// Buckets owned by the projection.
func (r *Rules) Buckets() []string { return []string{BucketRules} }

// Apply folds a notify.rules_set into the rows; other kinds are ignored.
func (r *Rules) Apply(tx *bolt.Tx, ev events.Envelope) error {
	if ev.Kind != events.KindNotifyRulesSet {
		return nil
	}
	var p events.NotifyRulesSet
	if err := events.DecodeInto(ev, &p); err != nil {
		return fmt.Errorf("notify rules: seq %d: %w", ev.Seq, err)
	}
	rs := RuleSet{Rules: p.Rules, Actor: ev.Actor, Time: ev.Time.UTC(), Seq: ev.Seq}
	if rs.Rules == nil {
		rs.Rules = []Rule{}
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return fmt.Errorf("notify rules: seq %d: %w", ev.Seq, err)
	}
	if err := tx.Bucket([]byte(BucketRules)).Put([]byte(p.Destination), b); err != nil {
		return fmt.Errorf("notify rules: seq %d: %w", ev.Seq, err)
	}
	r.mu.Lock()
	r.set[p.Destination] = rs
	r.mu.Unlock()
	return nil
}

// Load reads every destination's rules from the bucket.
func (r *Rules) Load(tx *bolt.Tx) error {
	set := map[string]RuleSet{}
	b := tx.Bucket([]byte(BucketRules))
	if b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var rs RuleSet
			if err := json.Unmarshal(v, &rs); err != nil {
				return fmt.Errorf("notify rules: destination %q: %w", k, err)
			}
			set[string(k)] = rs
			return nil
		})
		if err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.set = set
	r.mu.Unlock()
	return nil
}

// RuleSet returns the rules set for destination, and false (with the
// default rules) when none were ever set.
func (r *Rules) RuleSet(destination string) (RuleSet, bool) {
	r.mu.RLock()
	rs, ok := r.set[destination]
	r.mu.RUnlock()
	if !ok {
		return RuleSet{Rules: DefaultRules()}, false
	}
	rs.Rules = slices.Clone(rs.Rules)
	return rs, true
}
