package main

import (
	"fmt"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/notify"
)

// cmdNotify runs `jocasta notify list|set|test|ledger|redeliver`.
func cmdNotify(e *env, args []string) error {
	return sub(e, "notify", args, map[string]func(*env, []string) error{
		"list": cmdNotifyList, "set": cmdNotifySet, "test": cmdNotifyTest, "ledger": cmdNotifyLedger, "redeliver": cmdNotifyRedeliver,
	})
}

func cmdNotifyList(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("notify list", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("notify list", pos, 0, ""); err != nil {
		return err
	}
	return withNotifier(e, cfgPath, func(n notifier) error {
		views, err := n.NotifyList(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, views)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCHANNEL\tENABLED\tTARGET\tPENDING\tSENT\tFILTERED\tDEAD\tRULES")
		for _, v := range views {
			target := "(secret)"
			if v.Target != nil {
				target = *v.Target
			}
			rules := fmtRules(v.Rules)
			if v.Default {
				rules += " (default)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\t%d\t%d\t%d\t%s\n", v.Name, v.Channel, v.Enabled, target,
				v.Ledger.Pending, v.Ledger.Sent, v.Ledger.Filtered, v.Ledger.Dead, rules)
		}
		return tw.Flush()
	})
}

// fmtRules writes rules the way `notify set` reads them.
func fmtRules(rules []notify.Rule) string {
	if len(rules) == 0 {
		return "(nothing)"
	}
	parts := make([]string, len(rules))
	for i, r := range rules {
		scope := r.Scope
		switch r.Scope {
		case events.ScopeGroup:
			scope += "=" + r.Group
		case events.ScopeNetwork:
			scope += "=" + r.Network
		}
		parts[i] = strings.Join(r.Kinds, ",") + "@" + scope
	}
	return strings.Join(parts, " ")
}

// parseRule reads KINDS@SCOPE: kinds comma-separated, scope all, watched,
// group=NAME or network=CIDR.
func parseRule(s string) (events.NotifyRule, error) {
	kinds, scope, ok := strings.Cut(s, "@")
	if !ok || kinds == "" || scope == "" {
		return events.NotifyRule{}, usagef("rule %q: want KINDS@SCOPE, e.g. device.discovered,device.offline@all or device.online@group=cameras", s)
	}
	r := events.NotifyRule{Kinds: strings.Split(kinds, ",")}
	name, val, hasVal := strings.Cut(scope, "=")
	r.Scope = name
	switch {
	case name == events.ScopeGroup && hasVal:
		r.Group = val
	case name == events.ScopeNetwork && hasVal:
		r.Network = val
		if p, err := netip.ParsePrefix(val); err == nil && p.Masked() == p {
			r.Network = p.String()
		}
	case hasVal:
		return events.NotifyRule{}, usagef("rule %q: only group=NAME and network=CIDR take a value", s)
	case name != events.ScopeAll && name != events.ScopeWatched && name != events.ScopeGroup && name != events.ScopeNetwork:
		return events.NotifyRule{}, usagef("rule %q: the scope after @ is all, watched, group=NAME or network=CIDR", s)
	}
	return r, nil
}

func cmdNotifySet(e *env, args []string) error {
	var cfgPath string
	var none bool
	fs := newFlags("notify set", &cfgPath)
	var asJSON bool
	fs.BoolVar(&none, "none", false, "send nothing to the destination")
	fs.BoolVar(&asJSON, "json", false, "JSON output: the destination as notify list --json shows it")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || (len(pos) == 1 && !none) || (len(pos) > 1 && none) {
		return usagef("notify set NAME KINDS@SCOPE... (or --none); scopes: all, watched, group=NAME, network=CIDR")
	}
	name := pos[0]
	rules := []events.NotifyRule{}
	for _, s := range pos[1:] {
		r, err := parseRule(s)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	return withNotifier(e, cfgPath, func(n notifier) error {
		v, err := n.NotifySet(e.ctx, notifySetReq{Name: name, Rules: rules, Actor: actor()})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, v)
		}
		fmt.Fprintf(e.stdout, "notify.%s now receives: %s\n", name, fmtRules(v.Rules))
		return nil
	})
}

func cmdNotifyTest(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("notify test", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output: the attempt (time, status, latency_ms, error)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("notify test", pos, 1, "NAME"); err != nil {
		return err
	}
	return withNotifier(e, cfgPath, func(n notifier) error {
		a, err := n.NotifyTest(e.ctx, notifyNameReq{Name: pos[0]})
		if err != nil {
			return err
		}
		if asJSON {
			if err := printJSON(e.stdout, a); err != nil {
				return err
			}
		}
		if a.Error != "" {
			return userErrorf("notify.%s: test failed after %.0f ms: %s", pos[0], a.LatencyMS, a.Error)
		}
		if !asJSON {
			fmt.Fprintf(e.stdout, "notify.%s: test sent, answered %d in %.0f ms\n", pos[0], a.Status, a.LatencyMS)
		}
		return nil
	})
}

func cmdNotifyLedger(e *env, args []string) error {
	var cfgPath, state, cursor string
	var limit int
	var asJSON bool
	fs := newFlags("notify ledger", &cfgPath)
	fs.StringVar(&state, "state", "", "only pending, sent, filtered or dead records")
	fs.StringVar(&cursor, "cursor", "", "continue after the page that printed this cursor")
	fs.IntVar(&limit, "limit", 50, "most records, newest first (1 to 1000)")
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("notify ledger", pos, 1, "NAME"); err != nil {
		return err
	}
	switch state {
	case "", notify.StatePending, notify.StateSent, notify.StateFiltered, notify.StateDead:
	default:
		return usagef("--state %q: want pending, sent, filtered or dead", state)
	}
	if limit < 1 || limit > 1000 {
		return usagef("--limit %d: want 1 to 1000", limit)
	}
	return withNotifier(e, cfgPath, func(n notifier) error {
		page, err := n.NotifyLedger(e.ctx, notifyLedgerReq{Name: pos[0], State: state, Limit: limit, Cursor: cursor})
		if err != nil {
			return err
		}
		items := page.Items
		if page.NextCursor != nil {
			// On standard error, so that --json stays one array.
			fmt.Fprintf(e.stderr, "more records: jocasta notify ledger %s --cursor %s\n", pos[0], *page.NextCursor)
		}
		if asJSON {
			return printJSON(e.stdout, items)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTIME\tKIND\tSTATE\tATTEMPTS\tLAST")
		for _, r := range items {
			last := r.Reason
			if k := len(r.Attempts); k > 0 {
				last = fmtAttempt(r.Attempts[k-1])
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Entry.Time.UTC().Format("2006-01-02T15:04:05Z"), r.Entry.Kind, r.State, len(r.Attempts), strings.TrimSpace(last))
		}
		return tw.Flush()
	})
}

func cmdNotifyRedeliver(e *env, args []string) error {
	var cfgPath string
	var all bool
	fs := newFlags("notify redeliver", &cfgPath)
	var asJSON bool
	fs.BoolVar(&all, "all", false, "every dead record of the destination")
	fs.BoolVar(&asJSON, "json", false, "JSON output: destination, queued, live")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 && !(all && len(pos) == 1) {
		return usagef("notify redeliver NAME ID, or notify redeliver --all NAME")
	}
	id := ""
	if len(pos) == 2 {
		id = pos[1]
	}
	return withNotifier(e, cfgPath, func(n notifier) error {
		r, err := n.NotifyRedeliver(e.ctx, notifyRedeliverReq{Name: pos[0], ID: id})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, r)
		}
		when := "serve delivers them when it runs"
		if r.Live {
			when = "serve delivers them now"
		}
		fmt.Fprintf(e.stdout, "notify.%s: %d record(s) queued; %s\n", pos[0], r.Queued, when)
		return nil
	})
}
