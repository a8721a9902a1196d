package peerhttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  a\n\tb  ", "a b"},
		{"x\x00y\u202ez", "xyz"},
		{strings.Repeat("a", 300), strings.Repeat("a", 200) + "…"},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	// A closed port: refused, a NetError.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := Client(false)
	ctx := context.Background()
	_, err = c.Get("http://" + addr + "/x")
	e := Explain(ctx, "t", err)
	var ne *NetError
	if !errors.As(e, &ne) || !strings.Contains(e.Error(), "refused") {
		t.Errorf("refused: %v", e)
	}
	// A self-signed certificate without insecure.
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ts.Close()
	_, err = c.Get(ts.URL)
	if e := Explain(ctx, "t", err); !strings.Contains(e.Error(), "insecure: true") {
		t.Errorf("untrusted: %v", e)
	}
	if resp, err := Client(true).Get(ts.URL); err != nil {
		t.Errorf("insecure client refused a self-signed certificate: %v", err)
	} else {
		resp.Body.Close()
	}
	// TLS to a plain HTTP port.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	_, err = c.Get(strings.Replace(plain.URL, "http:", "https:", 1))
	if e := Explain(ctx, "t", err); !strings.Contains(e.Error(), "plain HTTP") && !strings.Contains(e.Error(), "does not speak TLS") {
		t.Errorf("https to http: %v", e)
	}
	// A timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(tctx, "GET", slow.URL, nil)
	_, err = c.Do(req)
	if e := Explain(tctx, "t", err); !errors.Is(e, context.DeadlineExceeded) || !strings.Contains(e.Error(), "timed out") {
		t.Errorf("timeout: %v", e)
	}
}

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		tls  bool
		host string
		port int
		path string
		want string
	}{
		{false, "192.0.2.1", 80, "/rest", "http://192.0.2.1:80/rest"},
		{true, "router.lan", 443, "/rest", "https://router.lan:443/rest"},
		{true, "fe80::1", 8443, "/ubus", "https://[fe80::1]:8443/ubus"},
		{false, "dns.lan", 5380, "", "http://dns.lan:5380"},
	} {
		if got := BaseURL(tc.tls, tc.host, tc.port, tc.path); got != tc.want {
			t.Errorf("BaseURL(%v, %q, %d, %q) = %q, want %q", tc.tls, tc.host, tc.port, tc.path, got, tc.want)
		}
	}
}
