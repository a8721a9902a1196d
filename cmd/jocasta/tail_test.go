package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// TestLogTailFollowsAcrossServe runs log tail while serve does not run,
// starts serve meanwhile (the tail must not hold the database), stops it
// again, and checks that the tail printed each token creation once, in
// order, whichever process appended it.
func TestLogTailFollowsAcrossServe(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) {
		t.Helper()
		if code, _, stderr := cli(t, "", "token", "create", "--config", cfgPath, "--name", name, "--mode", "read", "--expires", "never"); code != 0 {
			t.Fatalf("token create %s: %s", name, stderr)
		}
	}
	create("before") // not printed: the tail starts after it
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- followLog(ctx, cfg, 0, false, out) }()
	time.Sleep(2 * tailPoll)

	var d *daemon
	for _, step := range []string{"offline", "serving", "stopped"} {
		switch step {
		case "serving":
			d = startDaemon(t, cfgPath)
		case "stopped":
			start := time.Now()
			if err := d.stop(); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("serve took %s to stop with a tail attached", took)
			}
		}
		create(step)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), `"name":"`+step+`"`) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: token creation not tailed; output:\n%s", step, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Every event after the start, in order, none missed: the three
	// creations, and the presence rules serve recorded as it started.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var created []string
	for i, l := range lines {
		if want := fmt.Sprintf(`"seq":%d,`, i+2); !strings.Contains(l, want) {
			t.Errorf("line %d: %s, want %s", i, l, want)
		}
		switch {
		case strings.Contains(l, `"kind":"token.created"`):
			created = append(created, l)
		case !strings.Contains(l, `"kind":"inventory.rules_set"`):
			t.Errorf("line %d: an event nobody appended: %s", i, l)
		}
	}
	if len(created) != 3 || strings.Contains(out.String(), `"name":"before"`) {
		t.Fatalf("want exactly the 3 creations after the start, got:\n%s", out)
	}
	for i, name := range []string{"offline", "serving", "stopped"} {
		if !strings.Contains(created[i], `"name":"`+name+`"`) {
			t.Errorf("creation %d: %s, want %s", i, created[i], name)
		}
	}
}
