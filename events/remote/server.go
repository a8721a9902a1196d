package remote

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// EmbeddedOptions configure the NATS server the central runs itself.
type EmbeddedOptions struct {
	// Listen is host:port for the sensors (port 0: any free port).
	Listen string
	// User and Password are the credentials every sensor may connect
	// with (none: only the Sensors' own). That user may publish on every
	// sensor's subject: whoever holds its password can send as any name.
	User, Password string
	// Sensors maps a sensor name to its own password: that sensor
	// connects as the user of its name, which may publish only on its own
	// subject (SubjectFor(name)), so its password cannot send as another.
	Sensors map[string]string
	// TLSCert and TLSKey, when set, make the server take TLS only.
	TLSCert, TLSKey string
	// StoreDir holds JetStream's files (created 0700).
	StoreDir string
	Log      zerolog.Logger
}

// Embedded is a NATS server with JetStream running in the process.
//
// Its sensor users (the shared EmbeddedOptions.User, and one per
// EmbeddedOptions.Sensors name) may only publish on the sensors'
// subjects (the shared one on every jocasta-sensors.*, a sensor's own on
// jocasta-sensors.<name>) and receive the replies to their own requests
// (_INBOX.>): a sensor's password cannot read, purge or delete the
// stream, nor take messages from the central's consumer. The central's
// own user, with a random password made at each start, connects
// in-process (Conn) and may do everything.
type Embedded struct {
	srv        *server.Server
	user, pass string
}

// centralUser is the embedded server's user for the central's own
// connection.
const centralUser = "jocasta-central"

// maxPayload is the embedded server's largest message: a whole sweep of
// 10,000 hosts compresses to well under it.
const maxPayload = 8 << 20

// StartEmbedded starts the server and returns once it accepts clients.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	host, portText, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("remote: embedded listen %q: %w", o.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("remote: embedded listen %q: bad port", o.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if o.StoreDir == "" {
		return nil, errors.New("remote: embedded: no store dir")
	}
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("remote: embedded store dir: %w", err)
	}
	opts := &server.Options{
		ServerName: "jocasta-central",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		MaxPayload: maxPayload,
	}
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("remote: embedded: %w", err)
	}
	pass := hex.EncodeToString(secret[:])
	opts.Users = []*server.User{{Username: centralUser, Password: pass}}
	// sensorUser may publish on subjects and receive the replies to its
	// own requests (JetStream's acknowledgements), nothing else.
	sensorUser := func(name, password string, subjects ...string) *server.User {
		return &server.User{Username: name, Password: password, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: subjects},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}}
	}
	if o.User != "" {
		if o.User == centralUser {
			return nil, fmt.Errorf("remote: embedded: the user name %q is the central's own", centralUser)
		}
		opts.Users = append(opts.Users, sensorUser(o.User, o.Password, Topic+".*"))
	}
	for _, name := range slices.Sorted(maps.Keys(o.Sensors)) {
		switch {
		case name == centralUser:
			return nil, fmt.Errorf("remote: embedded: the sensor name %q is the central's own user", centralUser)
		case name == o.User:
			return nil, fmt.Errorf("remote: embedded: sensor %q has its own password and is also the shared user's name", name)
		case name == "" || strings.ContainsAny(name, ".*> \t"):
			return nil, fmt.Errorf("remote: embedded: bad sensor name %q", name)
		case o.Sensors[name] == "":
			return nil, fmt.Errorf("remote: embedded: sensor %q has an empty password", name)
		}
		opts.Users = append(opts.Users, sensorUser(name, o.Sensors[name], SubjectFor(name)))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("remote: embedded tls: %w", err)
		}
		opts.TLSConfig, opts.TLS = tc, true
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("remote: embedded server: %w", err)
	}
	srv.SetLoggerV2(natsLogger{o.Log.With().Str("component", "nats").Logger()}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("remote: embedded server on %s did not start within 15s", o.Listen)
	}
	return &Embedded{srv: srv, user: centralUser, pass: pass}, nil
}

// Addr is where the server listens for sensors.
func (e *Embedded) Addr() net.Addr { return e.srv.Addr() }

// Conn connects to the server in-process (no socket).
func (e *Embedded) Conn(name string, log zerolog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.InProcessServer(e.srv), nats.MaxReconnects(-1), nats.UserInfo(e.user, e.pass)}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: connect to the embedded server: %w", err)
	}
	return nc, nil
}

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// natsLogger sends the server's own log to zerolog (notices at debug:
// the server is chatty at start).
type natsLogger struct{ l zerolog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug().Msgf(format, v...) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn().Msgf(format, v...) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error().Msgf(format, v...) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error().Msgf(format, v...) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug().Msgf(format, v...) }
func (n natsLogger) Tracef(format string, v ...any)  { n.l.Trace().Msgf(format, v...) }
