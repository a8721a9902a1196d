package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBudget is serve's memory budget (docs/performance.md).
const rssBudget = 80 << 20

// TestSlowClientsKeepServeWithinBudget starts the real binary and holds
// 1,000 connections against it the way a hostile client would: half send
// most of a large header and stop, half declare a body and never send it.
// serve must keep its peak RSS under the 80 MB budget, still answer a
// well-behaved client, and cut every held connection within its read
// deadlines (ReadHeaderTimeout 10 s, ReadTimeout 30 s).
func TestSlowClientsKeepServeWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and holds 1,000 connections for up to 30 s")
	}
	bin := buildBinary(t)
	port := freePort(t)
	cfg := writeConfig(t, t.TempDir(), noSweeps+"server:\n  port: "+strconv.Itoa(port)+"\n")
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "GOGC=", "GOMEMLIMIT=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving the API") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	const clients = 1000
	bigHeader := "GET /api/livez HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 900<<10)
	slowBody := "PATCH /api/devices/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer jct_x\r\n" +
		"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"notes\":\""
	conns := make([]net.Conn, 0, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		wg.Go(func() {
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if i%2 == 0 {
				io.WriteString(c, bigHeader) // the server stops reading at its cap
			} else {
				io.WriteString(c, slowBody)
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// A well-behaved client is still answered (or told to retry, when
	// the held connections fill the cap), never left hanging.
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET /api/livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := readStatus(c)
	c.Close()
	if err != nil || (resp != 200 && resp != 503) {
		t.Fatalf("a good client got %d, %v while 1,000 slow ones were held", resp, err)
	}

	hwm, rss := procMem(t, cmd.Process.Pid)
	t.Logf("serve with %d slow clients: peak RSS %d MiB, now %d MiB", clients, hwm>>20, rss>>20)
	if hwm > rssBudget {
		t.Errorf("peak RSS %d MiB with %d slow clients, over the %d MiB budget", hwm>>20, clients, rssBudget>>20)
	}

	// Every held connection is cut by the server within its deadlines
	// (the bound here is generous; the deadlines are 10 s and 30 s).
	cut := make(chan int, len(conns))
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			_, err := io.Copy(io.Discard, c)
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				cut <- 0 // still held when the bound passed
				return
			}
			cut <- 1
		}()
	}
	n := 0
	for range conns {
		n += <-cut
	}
	if n != len(conns) {
		t.Errorf("%d of %d slow connections were still held after 60 s", len(conns)-n, len(conns))
	}
}

func readStatus(c net.Conn) (int, error) {
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	return strconv.Atoi(f[1])
}

// procMem reads a process's peak and current resident set size.
func procMem(t *testing.T, pid int) (hwm, rss int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			hwm = kb << 10
		case "VmRSS:":
			rss = kb << 10
		}
	}
	return hwm, rss
}
