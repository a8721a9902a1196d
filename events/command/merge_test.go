package command_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

// mergeWorld is a store, a runner and an inventory holding four devices
// found by one sweep, and a Commander over them.
func mergeWorld(t *testing.T) (*command.Commander, *store.Store, []string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	inv, err := inventory.New(inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.New(st, []runner.Projection{inv}, runner.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st.OnCommit(func(uint64) { run.Notify() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = st.Close() })

	sweep := events.SweepCompleted{ScanID: "s1", Started: now.Add(-10 * time.Second), Finished: now,
		Networks: []string{"10.0.0.0/24"}, ProbesSent: 254, Complete: true}
	for _, h := range []struct{ ip, mac string }{
		{"10.0.0.21", "3c:22:fb:00:00:01"}, {"10.0.0.22", "02:aa:bb:00:00:02"},
		{"10.0.0.31", "00:11:22:00:00:11"}, {"10.0.0.32", "00:11:22:00:00:12"},
	} {
		sweep.Hosts = append(sweep.Hosts, events.SweepHost{IP: h.ip, Network: "10.0.0.0/24", MAC: h.mac, Via: "icmp"})
	}
	ev := events.MustNew(events.KindSweepCompleted, sweep, now)
	ev.Source = "sweep:lab"
	out, err := st.AppendFunc(ctx, func(*bolt.Tx) ([]events.Envelope, error) { return []events.Envelope{ev}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := run.WaitFor(ctx, out[0].Seq); err != nil {
		t.Fatal(err)
	}
	page, err := inv.ListDevices(ctx, projections.DeviceFilter{Sort: "ip"})
	if err != nil || len(page.Items) != 4 {
		t.Fatalf("devices %v %v", page.Items, err)
	}
	var ids []string
	for _, d := range page.Items {
		ids = append(ids, d.ID)
	}
	return &command.Commander{Log: st, Sync: run.WaitFor, Devices: inv, Now: clock}, st, ids
}

func TestMergeCommands(t *testing.T) {
	ctx := context.Background()
	c, st, ids := mergeWorld(t)
	a, b, n1, n2 := ids[0], ids[1], ids[2], ids[3]
	var invalid *command.Invalid
	var refused *command.Refused
	var merged *inventory.MergedError
	type call struct {
		name    string
		unmerge bool
		into    string
		other   string
		check   func(err error) bool
		appends int
	}
	isInvalid := func(err error) bool { return errors.As(err, &invalid) }
	isRefused := func(err error) bool { return errors.As(err, &refused) }
	ok := func(err error) bool { return err == nil }
	for _, tc := range []call{
		{name: "no other device", into: a, check: isInvalid},
		{name: "into itself", into: a, other: a, check: isInvalid},
		{name: "unknown target", into: "dnope", other: a, check: func(err error) bool { return errors.Is(err, projections.ErrNotFound) }},
		{name: "unknown other", into: a, other: "dnope", check: isInvalid}, // a bad field (400 on /device), not a refusal
		{name: "unmerge unknown other", unmerge: true, into: a, other: "dnope", check: isInvalid},
		{name: "unmerge not merged", unmerge: true, into: a, other: b, check: isRefused},
		{name: "merge", into: a, other: b, check: ok, appends: 1},
		{name: "merge again", into: a, other: b, check: ok},
		{name: "into an alias", into: b, other: n1, check: func(err error) bool { return errors.As(err, &merged) && merged.Into == a }},
		{name: "an alias elsewhere", into: n1, other: b, check: isRefused},
		{name: "merge the NICs", into: n1, other: n2, check: ok, appends: 1},
		{name: "merge a target moves its group", into: a, other: n1, check: ok, appends: 1},
		{name: "unmerge from a non-root", unmerge: true, into: n1, other: n2, check: func(err error) bool { return errors.As(err, &merged) }},
		{name: "unmerge a chained device from the root", unmerge: true, into: a, other: n2, check: ok, appends: 1},
		{name: "unmerge", unmerge: true, into: a, other: b, check: ok, appends: 1},
		{name: "unmerge again", unmerge: true, into: a, other: b, check: isRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := st.Head()
			f := c.MergeDevices
			if tc.unmerge {
				f = c.UnmergeDevices
			}
			d, err := f(ctx, "token:alice", tc.into, tc.other)
			if !tc.check(err) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if err == nil && d.ID != tc.into {
				t.Errorf("answered device %s, want %s", d.ID, tc.into)
			}
			if got := int(st.Head() - head); got != tc.appends {
				t.Errorf("%d events appended, want %d", got, tc.appends)
			}
		})
	}
	// The log holds the merges with their actor.
	evs, err := st.Read(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == events.KindDeviceMerged || e.Kind == events.KindDeviceUnmerged {
			n++
			if e.Actor != "token:alice" || e.Source != "api" {
				t.Errorf("%s by %q from %q", e.Kind, e.Actor, e.Source)
			}
		}
	}
	if n != 5 {
		t.Errorf("%d merge events in the log, want 5", n)
	}
}
