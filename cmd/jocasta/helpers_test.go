package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/httpapi/apitest"
	"github.com/rs/zerolog"
)

// lockedBuffer collects a log that goroutines write concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeConfig writes a config file whose database lives in a temp dir.
func writeConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "jocasta.yaml")
	body := "db:\n  path: " + filepath.Join(dir, "data") + "\nlogger:\n  level: debug\n" + extra
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cli runs one command line in-process and returns its exit code, stdout
// and stderr.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, []string{}, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// testHooks, when set, are the hooks startDaemon passes to serve.
var testHooks *serveHooks

// daemon is serve running in-process on 127.0.0.1:0.
type daemon struct {
	base   string
	cfg    string
	log    *lockedBuffer
	client *http.Client
	stop   func() error
	// exited is closed when serve has returned (by itself or by stop),
	// and result is what it returned.
	exited func() <-chan struct{}
	result func() error
}

func startDaemon(t *testing.T, cfgPath string) *daemon {
	t.Helper()
	d := launchDaemon(t, cfgPath)
	// Ready means the projections caught up with the log.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := d.client.Get(d.base + "/api/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 30s\n%s", d.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return d
}

// launchDaemon starts serve in-process and returns once it listens,
// without waiting for it to be ready.
func launchDaemon(t *testing.T, cfgPath string) *daemon {
	t.Helper()
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() {
		h := &serveHooks{}
		if testHooks != nil {
			*h = *testHooks
		}
		h.addr, h.listening = "127.0.0.1:0", func(a net.Addr) { addrc <- a }
		done <- serve(ctx, cfg, zerolog.New(logs), nil, h)
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		cancel()
		t.Fatalf("serve stopped at start: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("serve did not listen\n%s", logs)
	}
	v := apitest.NewValidator(t)
	d := &daemon{base: "http://" + addr.String(), cfg: cfgPath, log: logs,
		client: &http.Client{Transport: v.Transport(t, http.DefaultTransport), Timeout: 30 * time.Second}}
	var once sync.Once
	var stopErr, result error
	exited := make(chan struct{})
	go func() { result = <-done; close(exited) }()
	d.exited = func() <-chan struct{} { return exited }
	d.result = func() error { <-exited; return result }
	d.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case <-exited:
				stopErr = result
			case <-time.After(10 * time.Second):
				t.Errorf("serve did not stop within 10s\n%s", logs)
			}
		})
		return stopErr
	}
	t.Cleanup(func() { d.stop() })
	return d
}

func (d *daemon) do(t *testing.T, method, path, token, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func inCI() bool { return os.Getenv("CI") == "true" }
