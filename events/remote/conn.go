package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// ClientOptions say how to reach a NATS server: the sensor's link to the
// central, or the central's to an existing server.
type ClientOptions struct {
	// URL is nats://host:port or tls://host:port (a list, comma separated).
	URL string
	// CredentialsFile is a NATS .creds file (a user JWT and its nkey seed).
	CredentialsFile string
	// User and Password, when the server takes a user and password.
	User, Password string
	// TLSCA is a CA bundle that verifies the server; TLSCert and TLSKey
	// are a client certificate. Insecure skips the server's verification.
	TLSCA, TLSCert, TLSKey string
	Insecure               bool
	// Name names the connection on the server ("jocasta-sensor-<name>").
	Name string
}

// natsOptions turns o into nats.go options. The connection retries its
// first connect and reconnects forever, and buffers nothing while
// disconnected: a publish then fails at once and its entry stays in the
// outbox.
func (o ClientOptions) natsOptions(log zerolog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(200*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if c.IsClosed() {
				return // closed on purpose, not a link down
			}
			ev := log.Warn()
			if err != nil {
				ev = ev.Str("reason", err.Error())
			}
			ev.Msg("NATS link down; observations wait in the outbox")
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info().Str("server", c.ConnectedUrlRedacted()).Msg("NATS link up again")
		}),
		// A refused user or password is retried like a link down (the
		// client's default gives up for good after the same refusal
		// twice, and the sensor then queued forever without a word): the
		// operator fixes the password on one side and the link comes up.
		nats.IgnoreAuthErrorAbort(),
		nats.ReconnectErrHandler(connectErrLogger(log)),
	}
	if o.CredentialsFile != "" {
		if _, err := os.Stat(o.CredentialsFile); err != nil {
			return nil, fmt.Errorf("remote: credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.CredentialsFile))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.TLSCA != "" || o.TLSCert != "" || o.Insecure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure} //nolint:gosec // the operator's choice, documented
		if o.TLSCA != "" {
			pem, err := os.ReadFile(o.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("remote: tls ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("remote: tls ca %s: no certificate in it", o.TLSCA)
			}
			cfg.RootCAs = pool
		}
		if (o.TLSCert == "") != (o.TLSKey == "") {
			return nil, errors.New("remote: tls cert and tls key go together")
		}
		if o.TLSCert != "" {
			c, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
			if err != nil {
				return nil, fmt.Errorf("remote: tls client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}

// connectErrLogger logs failed connection attempts: a new reason at
// once, the same one again at most every minute (attempts come every
// second or so). A refused login says what to check.
func connectErrLogger(log zerolog.Logger) func(*nats.Conn, error) {
	var mu sync.Mutex
	var last string
	var at time.Time
	return func(_ *nats.Conn, err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err.Error() == last && time.Since(at) < time.Minute {
			return
		}
		last, at = err.Error(), time.Now()
		ev := log.Warn().Str("reason", err.Error())
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			ev.Msg("NATS refused the login: check the user and password (or credentials file) on both sides; retrying")
			return
		}
		ev.Msg("NATS connection attempt failed; retrying")
	}
}

// Connect connects to the server of o. With RetryOnFailedConnect it
// returns even while the server cannot be reached, and connects later.
func Connect(o ClientOptions, log zerolog.Logger) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, errors.New("remote: no NATS URL")
	}
	opts, err := o.natsOptions(log)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: connect to NATS: %w", err)
	}
	return nc, nil
}
