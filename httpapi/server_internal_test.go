package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// startLimited serves h on 127.0.0.1 with the limits and returns the
// address; the server stops with the test.
func startLimited(t *testing.T, h http.Handler, limits ServerLimits, log zerolog.Logger) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, capped := NewServer(context.Background(), h, ln, limits, log)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(capped) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// closedWithin reports whether the server closes c (a read returns EOF or
// a reset) before limit passes. limit is a generous upper bound, not the
// deadline under test.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

func TestServerCutsSlowClients(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	limits := ServerLimits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond}
	addr := startLimited(t, ok, limits, zerolog.Nop())

	tests := []struct {
		name string
		send string
	}{
		{"headers never finished", "GET /api/livez HTTP/1.1\r\nHost: x\r\nX-Slow: "},
		{"a declared body never sent", "PATCH /api/devices/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"label\":"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.send); err != nil {
				t.Fatal(err)
			}
			if !closedWithin(t, c, 20*time.Second) {
				t.Fatal("the server still holds the connection of a client that stopped sending")
			}
		})
	}
}

func TestServerRefusesLargeHeaders(t *testing.T) {
	addr := startLimited(t, http.NotFoundHandler(), ServerLimits{}, zerolog.Nop())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 64 KiB of header: four times the cap; Go answers 431.
	req := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
	go io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

func TestServerCapsConnections(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	log := zerolog.New(logs)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	addr := startLimited(t, ok, ServerLimits{MaxConns: 3}, log)

	// Three idle connections take every slot (each served one request, so
	// the server has surely accepted it).
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("held connection: %v %v", resp, err)
		}
		held = append(held, c)
	}
	fourth, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fourth.Close()
	fourth.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(fourth), nil)
	if err != nil {
		t.Fatalf("the connection past the cap got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the cap: %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The refusal is logged once the answer is written: wait for it.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "connections refused"); {
		if time.Now().After(deadline) {
			t.Fatalf("the refusal was not logged: %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A slot freed by a close is usable again.
	held[0].Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot came back after a close: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRefusalLogIsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	l := newCappedListener(nil, 1, zerolog.New(&logs))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.refusedAt = func() time.Time { return now }
	for range 100 {
		a, b := net.Pipe()
		go io.Copy(io.Discard, b)
		l.refuse(a)
		b.Close()
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Fatalf("100 refusals within a second logged %d lines, want 1", n)
	}
	now = now.Add(refusalLogEvery)
	a, b := net.Pipe()
	go io.Copy(io.Discard, b)
	l.refuse(a)
	b.Close()
	if !strings.Contains(logs.String(), `"refused":100`) {
		t.Fatalf("the second line should count the 99 refusals after the first and this one: %s", logs.String())
	}
}

// syncWriter serialises writes of the server's goroutines to a buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.(*bytes.Buffer).String()
}
