package notify

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// View is a destination as the API and the CLI show it: never its URL's
// path or query, a token or a secret.
type View struct {
	Name    string `json:"name"`
	Channel string `json:"channel"` // push, webhook or http
	Enabled bool   `json:"enabled"`
	// Target is the scheme and host a push or webhook destination sends
	// to; null for http, whose whole URL is secret.
	Target *string `json:"target"`
	Rules  []Rule  `json:"rules"`
	// Default is true while the rules were never set: the destination
	// receives the default selection.
	Default    bool       `json:"default"`
	RulesSetBy *string    `json:"rules_set_by"`
	RulesSetAt *time.Time `json:"rules_set_at"`
	Ledger     Stats      `json:"ledger"`
}

// ViewOf describes destination d with its rules and ledger counts.
func ViewOf(db *bolt.DB, d *Destination, rules RuleSource) (View, error) {
	rs, set := rules.RuleSet(d.Name)
	v := View{Name: d.Name, Channel: d.Channel(), Enabled: d.Enabled, Rules: rs.Rules, Default: !set}
	if v.Rules == nil {
		v.Rules = []Rule{}
	}
	for i := range v.Rules {
		if v.Rules[i].Kinds == nil {
			v.Rules[i].Kinds = []string{}
		}
	}
	if t := d.Target(); t != "" {
		v.Target = &t
	}
	if set {
		actor, at := rs.Actor, rs.Time.UTC()
		v.RulesSetBy, v.RulesSetAt = &actor, &at
	}
	st, err := LedgerStats(db, d.Name)
	if err != nil {
		return View{}, err
	}
	v.Ledger = st
	return v, nil
}
