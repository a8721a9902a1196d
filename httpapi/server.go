package httpapi

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ServerLimits bound what one client can hold of the server: memory for
// headers, a connection, a goroutine and a descriptor for as long as it
// dawdles. The zero value means the defaults below.
type ServerLimits struct {
	// MaxHeaderBytes bounds the request line and headers. An API request
	// needs well under 1 KiB plus its token; a browser sends a few KiB of
	// cookies at most. Go's default (1 MiB) let 200 unfinished headers
	// take 430 MB.
	MaxHeaderBytes int
	// ReadHeaderTimeout is how long a client may take to send its
	// headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take to send a whole request,
	// body included (bodies are at most 64 KiB). A request that declares
	// a body and never sends it is cut when it passes.
	ReadTimeout time.Duration
	// WriteTimeout is how long a handler and the client together may take
	// to answer one request. It is set per request: a handler that
	// streams (a log tail, server-sent events, MCP) extends its own with
	// http.ResponseController.SetWriteDeadline.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxConns caps the connections open at once. Past it a new
	// connection gets 503 with Retry-After and is closed at once, and the
	// refusals are logged (once per LogEvery at most).
	MaxConns int
}

// Defaults of ServerLimits.
const (
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 512
)

// refusalLogEvery bounds how often refused connections are logged, so
// that a flood cannot turn into a flood of log lines.
const refusalLogEvery = 10 * time.Second

func (l *ServerLimits) setDefaults() {
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
}

// NewServer returns the http.Server for h with the limits applied, and
// the listener to serve it on: ln wrapped so that at most MaxConns
// connections are open at once. base is the context of every request
// (cancelled when the service stops).
func NewServer(base context.Context, h http.Handler, ln net.Listener, limits ServerLimits, log zerolog.Logger) (*http.Server, net.Listener) {
	limits.setDefaults()
	srv := &http.Server{
		Handler:           h,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	return srv, newCappedListener(ln, limits.MaxConns, log)
}

// cappedListener accepts every connection but serves at most max at once:
// one past the cap is answered 503 and closed, so it never holds a
// goroutine or a descriptor for longer than that write.
type cappedListener struct {
	net.Listener
	max  int
	open atomic.Int64
	log  zerolog.Logger

	mu        sync.Mutex
	refused   int64     // since the last log line
	lastLog   time.Time // of the last refusal line
	refusedAt func() time.Time
}

func newCappedListener(ln net.Listener, max int, log zerolog.Logger) *cappedListener {
	return &cappedListener{Listener: ln, max: max, log: log, refusedAt: time.Now}
}

// refusal is what a connection past the cap reads before it is closed.
var refusal = func() []byte {
	const body = "too many connections: retry in a second, with fewer\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > int64(l.max) {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

func (l *cappedListener) refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write(refusal)
	_ = c.Close()
	now := l.refusedAt()
	l.mu.Lock()
	l.refused++
	var n int64
	if now.Sub(l.lastLog) >= refusalLogEvery {
		n, l.refused, l.lastLog = l.refused, 0, now
	}
	l.mu.Unlock()
	if n > 0 {
		l.log.Warn().Int64("refused", n).Int("max_conns", l.max).Str("last_peer", c.RemoteAddr().String()).
			Msg("connections refused: the connection cap is reached (503 sent); a client may be holding connections open")
	}
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	l    *cappedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
