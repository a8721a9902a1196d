// Package flowtest runs real flow exporters from Debian packages against
// a listener, for tests: softflowd exporting a packet capture (as
// written by flowgen.WritePcap) and nfdump's nfreplay replaying one.
//
// # Caveats
//
// softflowd 1.1.0 reading a capture (-r) blocks in accept(2) on its
// control socket before it reads the file. Softflowd therefore wakes it
// through softflowctl, waits until its statistics count every packet of
// the capture, then asks it to shut down, which expires and exports
// every flow. nfreplay needs an nfcapd file:
// Nfreplay makes one from the capture with nfpcapd -r first.
package flowtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Require skips t loudly when a tool is missing, or fails it when
// CI=true (CI installs softflowd and nfdump).
func Require(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", tool)); err != nil {
				missing = append(missing, tool)
			}
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "flow exporters: needs " + strings.Join(missing, ", ") + " (as root: apt-get install -y softflowd nfdump)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPING EXPORTER TEST: " + msg)
}

func tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return filepath.Join("/usr/sbin", name)
}

// Softflowd exports the capture pcap (packets packets long) to dst
// ("ip:port") as NetFlow version ("5", "9" or "10" for IPFIX), running
// softflowd under the command prefix wrap (such as ip netns exec <ns>;
// nil for none). dir holds its pid file and control socket. It returns
// once softflowd has exported every flow and exited.
func Softflowd(ctx context.Context, wrap []string, dir, pcap, dst, version string, packets int) error {
	ctl := filepath.Join(dir, "softflowd.ctl")
	args := append(append([]string(nil), wrap...), tool("softflowd"), "-d", "-r", pcap, "-n", dst, "-v", version,
		"-p", filepath.Join(dir, "softflowd.pid"), "-c", ctl)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("flowtest: start softflowd: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fail := func(err error) error {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("flowtest: softflowd: %w\n%s", err, out.String())
	}
	// softflowd waits in accept(2) before it reads the capture: each
	// control request lets it go on. Once its statistics show every
	// packet processed, shutdown expires and exports every flow.
	want := "Packets processed: " + strconv.Itoa(packets) + "\n"
	asked := false
	deadline := time.Now().Add(30 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("flowtest: softflowd: %w\n%s", err, out.String())
			}
			break wait
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(errors.New("it did not finish within 30s"))
		}
		if _, err := os.Stat(ctl); err != nil || asked {
			continue
		}
		stats, err := exec.CommandContext(ctx, tool("softflowctl"), "-c", ctl, "statistics").CombinedOutput()
		if err == nil && strings.Contains(string(stats), want) {
			asked = true
			_ = exec.CommandContext(ctx, tool("softflowctl"), "-c", ctl, "shutdown").Run()
		}
	}
	if !strings.Contains(out.String(), want) {
		return fmt.Errorf("flowtest: softflowd did not process the %d packets of the capture:\n%s", packets, out.String())
	}
	if !strings.Contains(out.String(), "0 failures") {
		return fmt.Errorf("flowtest: softflowd reports export failures:\n%s", out.String())
	}
	return nil
}

// Nfreplay turns the capture pcap into an nfcapd file with nfpcapd -r
// (in dir) and replays it to dst ("ip", port) as NetFlow v9 with
// nfreplay, under the command prefix wrap.
func Nfreplay(ctx context.Context, wrap []string, dir, pcap, host string, port int) error {
	flows := filepath.Join(dir, "nfpcapd")
	if err := os.MkdirAll(flows, 0o700); err != nil {
		return fmt.Errorf("flowtest: %w", err)
	}
	if b, err := exec.CommandContext(ctx, tool("nfpcapd"), "-r", pcap, "-w", flows).CombinedOutput(); err != nil {
		return fmt.Errorf("flowtest: nfpcapd -r %s: %w: %s", pcap, err, b)
	}
	files, err := filepath.Glob(filepath.Join(flows, "nfcapd.2*"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("flowtest: nfpcapd wrote no nfcapd file in %s", flows)
	}
	for _, f := range files {
		args := append(append([]string(nil), wrap...), tool("nfreplay"), "-r", f, "-H", host, "-p", strconv.Itoa(port), "-v", "9")
		if b, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("flowtest: nfreplay -r %s: %w: %s", f, err, b)
		}
	}
	return nil
}
