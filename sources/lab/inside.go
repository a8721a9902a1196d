package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FromEnv returns the lab described by EnvInside, in a test re-run inside
// the scanner namespace.
func FromEnv() (*Lab, bool) {
	v := os.Getenv(EnvInside)
	if v == "" {
		return nil, false
	}
	var l Lab
	if err := json.Unmarshal([]byte(v), &l); err != nil {
		return nil, false
	}
	l.inside = true
	l.logf = func(string, ...any) {}
	return &l, true
}

// InScanner runs the calling test inside the scanner namespace.
//
// In the test process it re-runs the test binary as
// `ip netns exec <scanner> <binary> -test.run '^<name>$' -test.v` with the
// lab described in EnvInside, streams the child's output into the test
// log, fails t if the child fails (or did not run the test), and returns
// false: the caller returns at once. In the child it returns true and the
// test body runs with the scanner's sockets, netlink and resolv.conf.
//
//	l := lab.New(t, spec)
//	if !l.InScanner(t) {
//		return
//	}
//	// inside the scanner namespace
func (l *Lab) InScanner(t *testing.T) bool {
	t.Helper()
	if l.inside {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("lab: test binary: %v", err)
	}
	desc, err := json.Marshal(l)
	if err != nil {
		t.Fatalf("lab: describe: %v", err)
	}
	args := []string{"netns", "exec", l.ScannerNS(), exe, "-test.run", runPattern(t.Name()), "-test.v", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, toolPath("ip"), args...)
	cmd.Env = append(os.Environ(), EnvInside+"="+string(desc))
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var (
		wg              sync.WaitGroup
		ran, skipped    bool
		skipReason      string
		runLine         = "=== RUN   " + t.Name()
		skipLine        = "--- SKIP: " + t.Name() + " "
		lastWasSkipLine bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.TrimSpace(line) == runLine:
				ran = true
			case strings.HasPrefix(strings.TrimSpace(line), skipLine):
				skipped, lastWasSkipLine = true, true
				t.Log("[scanner] " + line)
				continue
			case lastWasSkipLine && skipReason == "":
				skipReason = strings.TrimSpace(line)
			}
			lastWasSkipLine = false
			t.Log("[scanner] " + line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	runErr := cmd.Run()
	_ = pw.Close()
	wg.Wait()
	switch {
	case runErr != nil:
		t.Errorf("lab: the test failed in the scanner namespace %s: %v", l.ScannerNS(), runErr)
	case !ran:
		t.Errorf("lab: the re-run in the scanner namespace did not run %s", t.Name())
	case skipped:
		t.Skip("skipped in the scanner namespace: " + skipReason)
	}
	return false
}

// runPattern anchors every level of a (sub)test name for -test.run.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// Do runs fn on an OS thread switched into a node's network namespace (a
// node name such as "scanner", or a full namespace name). Sockets fn
// creates belong to that namespace and keep working from any goroutine
// afterwards, which makes Do the way to open a scanner socket from a
// benchmark. Goroutines that fn starts run in the caller's namespace, and
// files fn opens under /etc are the host's (use InScanner for
// resolv.conf).
func (l *Lab) Do(ns string, fn func() error) error {
	if full, ok := l.NS[ns]; ok {
		ns = full
	}
	return DoInNamespace(filepath.Join("/run/netns", ns), fn)
}

// DoInNamespace runs fn on an OS thread switched into the network
// namespace at path (such as /run/netns/name).
func DoInNamespace(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: current namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: namespace: %w", err)
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: enter %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := setns(orig); err != nil {
			// Leave the thread locked: the runtime ends it with the
			// goroutine instead of reusing a thread in the wrong namespace.
			errc <- fmt.Errorf("lab: leave %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setnsTrap is the setns(2) system call number; package syscall does not
// export it.
var setnsTrap = map[string]uintptr{
	"amd64": 308, "arm64": 268, "riscv64": 268, "loong64": 268, "386": 346,
	"arm": 375, "ppc64": 350, "ppc64le": 350, "s390x": 339,
}

func setns(f *os.File) error {
	trap, ok := setnsTrap[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("setns: unknown system call number on %s", runtime.GOARCH)
	}
	_, _, e := syscall.RawSyscall(trap, f.Fd(), syscall.CLONE_NEWNET, 0)
	if e != 0 {
		return e
	}
	return nil
}
