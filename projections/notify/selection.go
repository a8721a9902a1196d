package notify

import (
	"fmt"
	"net/netip"
	"slices"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Limits of a selection.
const (
	MaxRules    = 16
	maxGroupLen = 64 // the device group's own limit (events/command.MaxGroup)
)

// SelectableKinds are the change-log kinds a destination may select, in
// the order the API and the CLI list them.
func SelectableKinds() []string {
	return []string{
		projections.ChangeDiscovered, projections.ChangeOnline, projections.ChangeOffline,
		projections.ChangeQuiet, projections.ChangeAddressAdded, projections.ChangeAddressRetired,
		projections.ChangeMACChanged, projections.ChangeNameChanged, projections.ChangePortOpened,
		projections.ChangePortClosed, projections.ChangeAttached, projections.ChangeEdited,
		projections.ChangeWatchStarted, projections.ChangeWatchStopped, projections.ChangeDeleted,
		projections.ChangeSourceFailing, projections.ChangeSourceRecovered,
		projections.ChangeMerged, projections.ChangeUnmerged,
	}
}

// Rule selects kinds of change of the devices in a scope. It is the
// events.NotifyRule of the log, checked.
type Rule = events.NotifyRule

// DefaultRules is what a destination receives until its rules are set
// (DECISIONS.md): every new device, and watched devices coming online or
// going quiet.
func DefaultRules() []Rule {
	return []Rule{
		{Kinds: []string{projections.ChangeDiscovered}, Scope: events.ScopeAll},
		{Kinds: []string{projections.ChangeOnline, projections.ChangeQuiet}, Scope: events.ScopeWatched},
	}
}

// FieldProblem is one thing wrong with a selection: Pointer is the JSON
// pointer of the field (/rules/0/kinds/1), Detail what to change.
type FieldProblem struct {
	Pointer string
	Detail  string
}

// CheckRules lists what is wrong with rules, or nil. Kinds must be
// selectable and not repeated within a rule; a group rule names a group,
// a network rule a CIDR prefix with no host bits; other scopes take
// neither.
func CheckRules(rules []Rule) []FieldProblem {
	var out []FieldProblem
	add := func(ptr, format string, args ...any) {
		out = append(out, FieldProblem{ptr, fmt.Sprintf(format, args...)})
	}
	if len(rules) > MaxRules {
		add("/rules", "%d rules: use at most %d (a rule takes several kinds)", len(rules), MaxRules)
		return out
	}
	known := SelectableKinds()
	for i, r := range rules {
		p := fmt.Sprintf("/rules/%d", i)
		if len(r.Kinds) == 0 {
			add(p+"/kinds", "empty: name at least one change kind (%s), or remove the rule", listKinds())
		}
		for j, k := range r.Kinds {
			switch {
			case !slices.Contains(known, k):
				add(fmt.Sprintf("%s/kinds/%d", p, j), "%q is not a change kind that can be sent: want one of %s", k, listKinds())
			case slices.Index(r.Kinds, k) != j:
				add(fmt.Sprintf("%s/kinds/%d", p, j), "%q is listed twice", k)
			}
		}
		switch r.Scope {
		case events.ScopeAll, events.ScopeWatched:
			if r.Group != "" {
				add(p+"/group", "only a rule with scope group takes a group")
			}
			if r.Network != "" {
				add(p+"/network", "only a rule with scope network takes a network")
			}
		case events.ScopeGroup:
			switch {
			case r.Group == "":
				add(p+"/group", "required with scope group: the device group's name")
			case utf8.RuneCountInString(r.Group) > maxGroupLen:
				add(p+"/group", "%d characters long: a group has at most %d", utf8.RuneCountInString(r.Group), maxGroupLen)
			default:
				if d := events.CheckText(r.Group, false); d != "" {
					add(p+"/group", "%s", d)
				}
			}
			if r.Network != "" {
				add(p+"/network", "only a rule with scope network takes a network")
			}
		case events.ScopeNetwork:
			if pfx, err := netip.ParsePrefix(r.Network); err != nil {
				add(p+"/network", "%q is not a CIDR prefix such as 192.0.2.0/24 or 2001:db8::/64", r.Network)
			} else if pfx.Masked() != pfx {
				add(p+"/network", "%q has host bits set: did you mean %s?", r.Network, pfx.Masked())
			}
			if r.Group != "" {
				add(p+"/group", "only a rule with scope group takes a group")
			}
		default:
			add(p+"/scope", "%q: want all, watched, group or network", r.Scope)
		}
	}
	return out
}

func listKinds() string {
	k := SelectableKinds()
	s := ""
	for i, v := range k {
		if i > 0 {
			s += ", "
		}
		s += v
	}
	return s
}

// reasonGroupSteady is the reason for a presence change of a merged
// device that did not change its group's presence
// (projections.ChangeEntry.GroupSteady): never sent, whatever the rules.
const reasonGroupSteady = "its merged group's presence did not change (another member is online)"

// Decide says whether rules select the change e of device d (nil when
// the inventory no longer has it), and when not, why, as a short phrase
// for the ledger.
func Decide(rules []Rule, e projections.ChangeEntry, d *projections.Device) (bool, string) {
	if e.GroupSteady {
		return false, reasonGroupSteady
	}
	reason := "kind not selected"
	for _, r := range rules {
		if !slices.Contains(r.Kinds, e.Kind) {
			continue
		}
		ok, why := inScope(r, d)
		if ok {
			return true, ""
		}
		reason = why
	}
	return false, reason
}

func inScope(r Rule, d *projections.Device) (bool, string) {
	if r.Scope == events.ScopeAll {
		return true, ""
	}
	if d == nil {
		return false, "device no longer in the inventory"
	}
	switch r.Scope {
	case events.ScopeWatched:
		return d.Watched, "device not watched"
	case events.ScopeGroup:
		return d.Group != nil && *d.Group == r.Group, "device not in group " + r.Group
	case events.ScopeNetwork:
		pfx, err := netip.ParsePrefix(r.Network)
		if err != nil {
			return false, "bad network"
		}
		for _, a := range d.Addresses {
			if ip, err := netip.ParseAddr(a.IP); err == nil && pfx.Contains(ip) {
				return true, ""
			}
		}
		return false, "device has no address in " + r.Network
	}
	return false, "unknown scope " + r.Scope
}
