package command

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/notify"
)

// NotifyRules is the rules read model the notification commands read
// (projections/notify.Rules).
type NotifyRules interface {
	RuleSet(destination string) (notify.RuleSet, bool)
}

// destinationName is the form of a destination's name (a key under
// notify in the configuration).
var destinationName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// SetNotifyRules replaces the rules of destination: it appends one
// notify.rules_set (stream notify/<destination>) with source and actor,
// unless the destination already has exactly these rules set. Rules that
// CheckRules refuses are an *Invalid whose fields are JSON pointers
// without the leading slash (rules/0/kinds/1). The caller checks that the
// destination is configured; rules of a destination that is not are kept
// and apply once it is.
func (c *Commander) SetNotifyRules(ctx context.Context, source, actor string, read NotifyRules, destination string, rules []events.NotifyRule) error {
	if !destinationName.MatchString(destination) {
		return &Invalid{[]FieldError{{"destination", fmt.Sprintf("%q is not a destination name: lower-case letters, digits, - and _", destination)}}}
	}
	if probs := notify.CheckRules(rules); len(probs) > 0 {
		errs := make([]FieldError, len(probs))
		for i, p := range probs {
			errs[i] = FieldError{strings.TrimPrefix(p.Pointer, "/"), p.Detail}
		}
		return &Invalid{errs}
	}
	rules = canonicalRules(rules)
	return c.appendDecided(ctx, func() (*events.Envelope, error) {
		if cur, set := read.RuleSet(destination); set && sameRules(cur.Rules, rules) {
			return nil, nil
		}
		return c.event(events.KindNotifyRulesSet, events.NotifyRulesSet{Destination: destination, Rules: rules},
			source, actor, "notify/"+destination, "")
	})
}

// canonicalRules copies rules with non-nil kind lists.
func canonicalRules(rules []events.NotifyRule) []events.NotifyRule {
	out := make([]events.NotifyRule, len(rules))
	for i, r := range rules {
		r.Kinds = slices.Clone(r.Kinds)
		out[i] = r
	}
	return out
}

func sameRules(a, b []events.NotifyRule) bool {
	return slices.EqualFunc(a, b, func(x, y events.NotifyRule) bool {
		return x.Scope == y.Scope && x.Group == y.Group && x.Network == y.Network && slices.Equal(x.Kinds, y.Kinds)
	})
}
