package main

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// TestStreamingEndsAtShutdown checks that a stream on the control socket
// ends when serve stops: a tail ends cleanly, an export that was cut says
// so in its last line.
func TestStreamingEndsAtShutdown(t *testing.T) {
	tests := []struct {
		name string
		f    func(ctx context.Context, _ struct{}, w io.Writer) error
		want string
	}{
		{"tail ends cleanly", func(ctx context.Context, _ struct{}, w io.Writer) error {
			io.WriteString(w, "{\"seq\":1}\n")
			<-ctx.Done()
			return nil
		}, "{\"seq\":1}\n"},
		{"export cut", func(ctx context.Context, _ struct{}, w io.Writer) error {
			io.WriteString(w, "{\"seq\":1}\n")
			<-ctx.Done()
			return ctx.Err()
		}, "{\"seq\":1}\n{\"error\":\"serve stopped during the command; run it again\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, end := context.WithCancel(context.Background())
			h := streaming(streams, tt.f)
			rec := httptest.NewRecorder()
			done := make(chan error, 1)
			go func() { done <- h(context.Background(), []byte("{}"), rec) }()
			end()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != tt.want {
				t.Errorf("body %q, want %q", got, tt.want)
			}
			if strings.Contains(rec.Body.String(), "context canceled") {
				t.Error("internal error text leaked")
			}
		})
	}
}

// TestControlRefusesAnotherDatabase: two configurations share a db.path
// (so a control socket) with different db.name; commands of the one whose
// database serve does not hold are refused, not carried out on the other.
func TestControlRefusesAnotherDatabase(t *testing.T) {
	dir := t.TempDir()
	served := writeConfig(t, dir, noSweeps)
	other := filepath.Join(dir, "other.yaml")
	body := "db:\n  path: " + filepath.Join(dir, "data") + "\n  name: other.db\n" + noSweeps
	if err := os.WriteFile(other, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := cli(t, "", "config", "check", "--config", other); code != 0 {
		t.Fatalf("other config: %s %s", out, stderr)
	}
	startDaemon(t, served)
	code, _, stderr := cli(t, "", "token", "create", "--config", other, "--name", "x", "--mode", "read", "--expires", "never")
	if code != exitUser || !strings.Contains(stderr, "serves the database") || !strings.Contains(stderr, "other.db") {
		t.Fatalf("a command for other.db through the socket of jocasta.db: exit %d %q", code, stderr)
	}
	_, out, _ := cli(t, "", "token", "list", "--config", served)
	if strings.Contains(out, " x ") {
		t.Fatalf("the command was carried out on the served database:\n%s", out)
	}
}

// TestControlActorFromPeerCredentials: the actor of a write through the
// control socket is the connecting process's user, whatever the request
// claims.
func TestControlActorFromPeerCredentials(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), noSweeps)
	startDaemon(t, cfgPath)
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg))
	if !ok {
		t.Fatal("no control socket")
	}
	if _, err := s.TokenCreate(context.Background(), tokenCreateReq{Name: "forged", Mode: "read", Expires: "never", Actor: "cli:someone-else"}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := s.LogExport(context.Background(), exportReq{}, &out); err != nil {
		t.Fatal(err)
	}
	want := `"actor":"` + uidActor(os.Getuid()) + `"`
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "someone-else") {
		t.Fatalf("exported log lacks %s or keeps the forged actor:\n%s", want, out.String())
	}
}
