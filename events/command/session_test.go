package command_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/store"
)

func TestSessionCommands(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	acc := access.New(clock)
	run, err := runner.New(st, []runner.Projection{acc}, runner.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st.OnCommit(func(uint64) { run.Notify() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = st.Close() })
	c := &command.Commander{Log: st, Sync: run.WaitFor, Accounts: acc, Now: clock}

	var refused *command.Refused
	if _, _, err := c.StartSession(ctx, "ada", time.Hour); !errors.As(err, &refused) {
		t.Fatalf("StartSession of an unknown user = %v, want refused", err)
	}
	var invalid *command.Invalid
	if _, _, err := c.StartSession(ctx, "ada", 0); !errors.As(err, &invalid) {
		t.Fatalf("StartSession for 0s = %v, want invalid", err)
	}
	if err := c.AddUser(ctx, "cli", "test", "ada", "correct horse"); err != nil {
		t.Fatal(err)
	}
	sess, secret, err := c.StartSession(ctx, "ada", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if sess.User != "ada" || !sess.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("session %+v", sess)
	}
	if got, err := acc.Session(secret); err != nil || got.ID != sess.ID {
		t.Fatalf("Session(secret) = %+v, %v", got, err)
	}
	head := st.Head()
	if err := c.EndSession(ctx, "ada", sess.ID, "tired"); !errors.As(err, &invalid) {
		t.Fatalf("EndSession with a bad reason = %v", err)
	}
	if err := c.EndSession(ctx, "ada", sess.ID, events.SessionEndSignOut); err != nil {
		t.Fatal(err)
	}
	if err := c.EndSession(ctx, "ada", sess.ID, events.SessionEndSignOut); err != nil {
		t.Fatal(err)
	}
	if st.Head() != head+1 {
		t.Fatalf("head %d, want exactly one session.ended after %d", st.Head(), head)
	}
	if _, err := acc.Session(secret); err == nil {
		t.Fatal("an ended session authenticates")
	}
	// The log never holds the secret.
	evs, err := st.Read(1, 100)
	if err != nil || len(evs) != 3 {
		t.Fatalf("read the log: %d events, %v", len(evs), err)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Payload), secret) {
			t.Fatalf("event %s holds the session secret", e.Kind)
		}
	}
}
