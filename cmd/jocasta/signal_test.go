package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds bin/jocasta for tests that need a real process.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jocasta")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSIGTERMStopsWithin5s starts the real binary, keeps appends in flight
// through the control socket, sends SIGTERM and checks that it exits 0
// within 5 seconds and that the log it leaves verifies and holds every
// token whose creation was acknowledged.
func TestSIGTERMStopsWithin5s(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, noSweeps+"server:\n  port: "+strconv.Itoa(freePort(t))+"\n")
	cmd := exec.Command(bin, "serve", "--config", cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	ready := make(chan struct{})
	// The log is read to its end (serve's exit closes the pipe) before
	// Wait, which would close the pipe under the reader and lose the
	// last lines, the stop line among them.
	var (
		logMu   sync.Mutex
		logBuf  strings.Builder
		logDone = make(chan struct{})
	)
	logs := func() string { logMu.Lock(); defer logMu.Unlock(); return logBuf.String() }
	go func() {
		defer close(logDone)
		started := false
		for lines.Scan() {
			logMu.Lock()
			logBuf.WriteString(lines.Text() + "\n")
			logMu.Unlock()
			if !started && strings.Contains(lines.Text(), "serving the API") {
				started = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("serve did not start:\n%s", logs())
	}
	// Keep token creations going through the socket while the signal lands.
	acked := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(acked)
		for i := 0; ctx.Err() == nil; i++ {
			out, err := exec.CommandContext(ctx, bin, "token", "create", "--config", cfg, "--name", "t"+strconv.Itoa(i), "--mode", "read", "--expires", "30d", "--json").Output()
			if err != nil {
				return
			}
			if strings.Contains(string(out), `"secret"`) {
				acked <- "t" + strconv.Itoa(i)
			}
		}
	}()
	time.Sleep(700 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { <-logDone; done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v:\n%s", err, logs())
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("serve still running 5s after SIGTERM:\n%s", logs())
	}
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	cancel()
	var names []string
	for n := range acked {
		names = append(names, n)
	}
	if len(names) == 0 {
		t.Fatal("no token creation was acknowledged before the stop")
	}
	code, out, stderrText := cli(t, "", "log", "verify", "--config", cfg)
	if code != 0 {
		t.Fatalf("verify after stop: %s %s", out, stderrText)
	}
	code, out, _ = cli(t, "", "token", "list", "--config", cfg)
	if code != 0 {
		t.Fatalf("token list after stop: exit %d: %s", code, out)
	}
	for _, n := range names {
		if !strings.Contains(out, " "+n+" ") {
			t.Errorf("acknowledged token %s missing after stop", n)
		}
	}
	if !strings.Contains(logs(), "stopped") {
		t.Errorf("no stop line in the log:\n%s", logs())
	}
}

// freePort asks the kernel for a free loopback port (serve needs a port in
// 1..65535 in its config).
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
