package peerhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Client returns a client for one peer: one idle connection kept (a
// router may log a login per connection), TLS 1.2 or later, certificate
// checks skipped only when insecure. Redirects are not followed (a
// reply elsewhere is not the API's). Deadlines come from the request's
// context.
func Client(insecure bool) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}, //nolint:gosec // the admin's choice: insecure: true
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0,
		ForceAttemptHTTP2:     false,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// NetError is a failure to reach the peer at all (refused, unreachable,
// name not found, TLS): reading another table would fail the same way.
type NetError struct {
	What string
	Msg  string
}

func (e *NetError) Error() string { return e.What + ": " + e.Msg }

// Explain turns a failed request into an error an admin can act on. what
// names the call ("ip/arp"). ctx is the request's context, to tell a
// timeout from a cancellation.
func Explain(ctx context.Context, what string, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: timed out (raise timeout if the peer is slow): %w", what, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certErr   *tls.CertificateVerificationError
		recErr    tls.RecordHeaderError
		dnsErr    *net.DNSError
		opErr     *net.OpError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &certErr):
		return &NetError{What: what, Msg: "TLS: the peer's certificate is not trusted (set insecure: true for a self-signed certificate)"}
	case errors.As(err, &hostErr):
		return &NetError{What: what, Msg: "TLS: the peer's certificate is for another name: " + Clean(hostErr.Error())}
	case errors.As(err, &recErr):
		return &NetError{What: what, Msg: "TLS: the peer does not speak TLS on this port (set ssl: false, or the TLS port)"}
	case errors.As(err, &dnsErr):
		return &NetError{What: what, Msg: "cannot resolve host " + Clean(dnsErr.Name)}
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return &NetError{What: what, Msg: Clean(opErr.Err.Error())}
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &NetError{What: what, Msg: "TLS: the peer answered in plain HTTP (set ssl: false)"}
	}
	return &NetError{What: what, Msg: Clean(unwrapURL(err).Error())}
}

// unwrapURL drops the *url.Error wrapper (method and URL) around err.
func unwrapURL(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && strings.HasPrefix(err.Error(), "Get ") || strings.HasPrefix(err.Error(), "Post ") {
		if inner := u.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// maxText bounds a peer's text quoted in an error.
const maxText = 200

// Clean makes text from a peer fit for one log line: control and
// formatting characters dropped, spaces collapsed, at most 200 bytes.
func Clean(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == unicode.ReplacementChar:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+len(string(r)) > maxText {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// BaseURL is a peer's API root: http or https (tls), host and port, then
// path ("/rest", "/api").
func BaseURL(tls bool, host string, port int, path string) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
}
