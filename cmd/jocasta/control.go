package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/store"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// The control socket: while serve runs, admin commands reach it over HTTP
// on the Unix socket <db.path>/jocasta.sock (mode 0600, owner only), and
// serve carries them out on its open database.

// controlServer serves admin operations on the control socket.
type controlServer struct {
	path string
	srv  *http.Server
	ln   net.Listener
	// endStreams cuts log tail and log export streams at shutdown, which
	// would otherwise hold it up; other requests in flight finish.
	endStreams context.CancelFunc
}

// listenControl creates the socket with mode 0600. A stale socket left by a
// killed serve is removed; the database lock already guarantees no other
// serve holds this database.
//
// Every request names the database its command meant (dbHeader, the
// absolute path of <db.path>/<db.name>): two configurations may share a
// db.path, and so a socket, with different db.name; a request for another
// file is refused instead of being carried out on this one. The actor of
// a write is taken from the socket's peer credentials (the uid of the
// process that connected), not from the request.
func listenControl(path, dbFile string, a admin, log zerolog.Logger) (*controlServer, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: remove stale %s: %w", path, err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket: listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: chmod %s: %w", path, err)
	}
	streams, endStreams := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	handle := func(op string, f func(ctx context.Context, body []byte, w http.ResponseWriter) error) {
		mux.HandleFunc("POST /v1/"+op, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if want := r.Header.Get(dbHeader); err == nil && want != dbFile {
				if want == "" {
					want = "(not named: an older jocasta binary?)"
				}
				err = userErrorf("this control socket serves the database %s, not %s: give each database its own db.path, or stop the serve of %s first", dbFile, want, dbFile)
			}
			if err == nil {
				err = f(r.Context(), body, w)
			}
			if err != nil {
				var ue userError
				status := http.StatusInternalServerError
				if errors.As(err, &ue) {
					status = http.StatusBadRequest
				} else {
					log.Error().Err(err).Str("op", op).Msg("control: admin operation failed")
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			}
		})
	}
	handle("token/create", unary(a.TokenCreate))
	handle("token/list", nullary(a.TokenList))
	handle("token/revoke", unaryNoResult(a.TokenRevoke))
	handle("user/add", unaryNoResult(a.UserAdd))
	handle("user/passwd", unaryNoResult(a.UserPasswd))
	handle("user/list", nullary(a.UserList))
	handle("user/remove", unaryNoResult(a.UserRemove))
	handle("log/verify", nullary(a.LogVerify))
	handle("replay", unary(a.Replay))
	handle("log/export", streaming(streams, a.LogExport))
	handle("log/tail", streaming(streams, a.LogTail))
	mux.HandleFunc("POST /v1/backup", backupHandler(a, dbFile, log))
	handle("log/stats", nullary(logStatsOp(a)))
	handle("whatif", unary(whatifOp(a)))
	ns := notifyServe{a} // notify_admin.go
	handle("notify/list", nullary(ns.NotifyList))
	handle("notify/set", unary(ns.NotifySet))
	handle("notify/test", unary(ns.NotifyTest))
	handle("notify/ledger", unary(ns.NotifyLedger))
	handle("notify/redeliver", unary(ns.NotifyRedeliver))
	cs := &controlServer{path: path, ln: ln, endStreams: endStreams, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerActor(c))
		}}}
	return cs, nil
}

// dbHeader names, in each control request, the database file the command
// is for.
const dbHeader = "X-Jocasta-Database"

// peerKey holds, in a control request's context, the actor derived from
// the connection's peer credentials.
type peerKey struct{}

// peerActor names the process at the other end of a control connection:
// "cli:<user>" from the uid of its peer credentials (SO_PEERCRED), or
// "cli:uid <n>" when the uid has no name; "cli" if the kernel says nothing.
func peerActor(c net.Conn) string {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return "cli"
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return "cli"
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return "cli"
	}
	return uidActor(int(cred.Uid))
}

// uidActor is the CLI actor of a uid: "cli:<user name>", or "cli:uid <n>".
func uidActor(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli:uid " + strconv.Itoa(uid)
}

// actorSetter is a request whose actor the control server fills in.
type actorSetter interface{ setActor(string) }

func (r *tokenCreateReq) setActor(a string) { r.Actor = a }
func (r *idReq) setActor(a string)          { r.Actor = a }
func (r *userReq) setActor(a string)        { r.Actor = a }

func unary[Req, Resp any](f func(context.Context, Req) (Resp, error)) func(context.Context, []byte, http.ResponseWriter) error {
	return func(ctx context.Context, body []byte, w http.ResponseWriter) error {
		var req Req
		if err := json.Unmarshal(body, &req); err != nil {
			return userErrorf("control: bad request: %v", err)
		}
		if s, ok := any(&req).(actorSetter); ok {
			a, _ := ctx.Value(peerKey{}).(string)
			if a == "" {
				a = "cli"
			}
			s.setActor(a)
		}
		resp, err := f(ctx, req)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(resp)
	}
}

func unaryNoResult[Req any](f func(context.Context, Req) error) func(context.Context, []byte, http.ResponseWriter) error {
	return unary(func(ctx context.Context, r Req) (struct{}, error) { return struct{}{}, f(ctx, r) })
}

func nullary[Resp any](f func(context.Context) (Resp, error)) func(context.Context, []byte, http.ResponseWriter) error {
	return unary(func(ctx context.Context, _ struct{}) (Resp, error) { return f(ctx) })
}

// flushWriter flushes after every write so tail streams line by line.
type flushWriter struct {
	w http.ResponseWriter
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// streaming serves a stream until its client leaves or streams ends.
func streaming[Req any](streams context.Context, f func(context.Context, Req, io.Writer) error) func(context.Context, []byte, http.ResponseWriter) error {
	return func(ctx context.Context, body []byte, w http.ResponseWriter) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(streams, cancel)()
		var req Req
		if err := json.Unmarshal(body, &req); err != nil {
			return userErrorf("control: bad request: %v", err)
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		// Errors after the first byte cannot change the status: report them
		// as a last line the client recognises.
		if err := f(ctx, req, flushWriter{w}); err != nil {
			if streams.Err() != nil {
				err = errors.New("serve stopped during the command; run it again")
			}
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		}
		return nil
	}
}

// Serve answers requests until Shutdown.
func (c *controlServer) Serve() error {
	if err := c.srv.Serve(c.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("control socket: %w", err)
	}
	return nil
}

// Shutdown stops the server, ends the streams, waits for the other
// requests in flight (until ctx ends), and removes the socket.
func (c *controlServer) Shutdown(ctx context.Context) error {
	c.endStreams()
	err := c.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = c.srv.Close()
	}
	os.Remove(c.path)
	return err
}

// socketAdmin forwards admin operations to a running serve.
type socketAdmin struct {
	client *http.Client
	dbFile string // the database the commands are for (dbHeader)
}

// dialControl connects to a running serve's control socket; ok is false
// when no serve answers there. Its requests are for the database dbFile
// (serve refuses them if it serves another).
func dialControl(path, dbFile string) (*socketAdmin, bool) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, false
	}
	conn.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &socketAdmin{client: &http.Client{Transport: tr}, dbFile: dbFile}, true
}

func (s *socketAdmin) post(ctx context.Context, op string, req any) (*http.Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://jocasta/v1/"+op, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set(dbHeader, s.dbFile)
	resp, err := s.client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e) != nil || e.Error == "" {
			e.Error = "serve answered " + resp.Status
		}
		return nil, errors.New(e.Error)
	}
	return resp, nil
}

func call[Resp any](ctx context.Context, s *socketAdmin, op string, req any) (Resp, error) {
	var out Resp
	resp, err := s.post(ctx, op, req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("control socket: decode answer to %s: %w", op, err)
	}
	return out, nil
}

func (s *socketAdmin) TokenCreate(ctx context.Context, r tokenCreateReq) (tokenCreateResp, error) {
	return call[tokenCreateResp](ctx, s, "token/create", r)
}
func (s *socketAdmin) TokenList(ctx context.Context) ([]projections.Token, error) {
	return call[[]projections.Token](ctx, s, "token/list", struct{}{})
}
func (s *socketAdmin) TokenRevoke(ctx context.Context, r idReq) error {
	_, err := call[struct{}](ctx, s, "token/revoke", r)
	return err
}
func (s *socketAdmin) UserAdd(ctx context.Context, r userReq) error {
	_, err := call[struct{}](ctx, s, "user/add", r)
	return err
}
func (s *socketAdmin) UserPasswd(ctx context.Context, r userReq) error {
	_, err := call[struct{}](ctx, s, "user/passwd", r)
	return err
}
func (s *socketAdmin) UserList(ctx context.Context) ([]userInfo, error) {
	return call[[]userInfo](ctx, s, "user/list", struct{}{})
}
func (s *socketAdmin) UserRemove(ctx context.Context, r userReq) error {
	_, err := call[struct{}](ctx, s, "user/remove", r)
	return err
}
func (s *socketAdmin) LogVerify(ctx context.Context) (store.VerifyReport, error) {
	return call[store.VerifyReport](ctx, s, "log/verify", struct{}{})
}
func (s *socketAdmin) Replay(ctx context.Context, r replayReq) (replayResp, error) {
	return call[replayResp](ctx, s, "replay", r)
}

func (s *socketAdmin) stream(ctx context.Context, op string, req any, w io.Writer) error {
	resp, err := s.post(ctx, op, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	enc := json.NewEncoder(w)
	for {
		var line json.RawMessage
		if err := dec.Decode(&line); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("control socket: %s: %w", op, err)
		}
		var e struct {
			Error string `json:"error"`
			Seq   uint64 `json:"seq"`
		}
		if json.Unmarshal(line, &e) == nil && e.Error != "" && e.Seq == 0 {
			return errors.New(e.Error)
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
}

func (s *socketAdmin) LogExport(ctx context.Context, r exportReq, w io.Writer) error {
	return s.stream(ctx, "log/export", r, w)
}
func (s *socketAdmin) LogTail(ctx context.Context, r tailReq, w io.Writer) error {
	return s.stream(ctx, "log/tail", r, w)
}

// dbFileAbs is the database file of cfg as an absolute, cleaned path (the
// same file named two ways compares equal; a link is not followed, since
// the file may not exist yet).
func dbFileAbs(cfg *config.Config) string {
	p, err := filepath.Abs(cfg.DBFile())
	if err != nil {
		return filepath.Clean(cfg.DBFile())
	}
	return p
}
