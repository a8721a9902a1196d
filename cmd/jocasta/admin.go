package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/httpapi/mcp"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
	dnsproj "github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/runner"
	"github.com/jocasta/jocasta/projections/scanlog"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/store"
)

// admin is every administrative operation. One implementation works on an
// open database (core); the other forwards to a running serve through the
// control socket, where the same core carries it out.
type admin interface {
	TokenCreate(ctx context.Context, req tokenCreateReq) (tokenCreateResp, error)
	TokenList(ctx context.Context) ([]projections.Token, error)
	TokenRevoke(ctx context.Context, req idReq) error
	UserAdd(ctx context.Context, req userReq) error
	UserPasswd(ctx context.Context, req userReq) error
	UserList(ctx context.Context) ([]userInfo, error)
	UserRemove(ctx context.Context, req userReq) error
	LogVerify(ctx context.Context) (store.VerifyReport, error)
	LogExport(ctx context.Context, req exportReq, w io.Writer) error
	LogTail(ctx context.Context, req tailReq, w io.Writer) error
	Replay(ctx context.Context, req replayReq) (replayResp, error)
}

type tokenCreateReq struct {
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	Expires string `json:"expires"`
	Actor   string `json:"actor"`
}

type tokenCreateResp struct {
	Token  projections.Token `json:"token"`
	Secret string            `json:"secret"`
}

type idReq struct {
	ID    string `json:"id"`
	Actor string `json:"actor"`
}

type userReq struct {
	Name     string `json:"name"`
	Password string `json:"password,omitempty"`
	Actor    string `json:"actor"`
}

type userInfo struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

type exportReq struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// IncludeSecrets keeps token and password hashes (for a backup);
	// otherwise they are redacted.
	IncludeSecrets bool `json:"include_secrets"`
}

type tailReq struct {
	From           uint64 `json:"from"`
	IncludeSecrets bool   `json:"include_secrets"`
}

// shown is e as the log commands print it: credentials redacted unless
// the command asked for them.
func shown(e events.Envelope, includeSecrets bool) events.Envelope {
	if includeSecrets {
		return e
	}
	return events.RedactSecrets(e)
}

type replayReq struct {
	Until  time.Time `json:"until"`
	Output string    `json:"output"`
}

type replayResp struct {
	Output string `json:"output"`
	Events uint64 `json:"events"`
}

// userError marks an error caused by the request (bad name, unknown id);
// the control socket answers it with 400 and the CLI exits 1 either way.
type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

// cliError turns the write side's refusals into user errors (exit 1 with
// their sentence); other errors pass as they are.
func cliError(err error) error {
	var inv *command.Invalid
	var ref *command.Refused
	switch {
	case errors.As(err, &inv):
		parts := make([]string, len(inv.Fields))
		for i, f := range inv.Fields {
			parts[i] = f.Field + " " + f.Detail
		}
		return userErrorf("%s", strings.Join(parts, "; "))
	case errors.As(err, &ref):
		return userError{ref.Msg}
	}
	return err
}

// core is an open database with the projections the admin commands need.
type core struct {
	st  *store.Store
	run *runner.Runner
	// sync returns once the projections have applied seq: in serve the
	// running runner's WaitFor, for a command alone a CatchUp.
	sync   func(ctx context.Context, seq uint64) error
	access *access.Projection
	inv    *inventory.Inventory
	scans  *scanlog.Log

	// traffic is the flows' read model (projections/traffic).
	traffic *traffic.Projection
	// dns is the DNS plugins' read model (projections/dns).
	dns *dnsproj.Projection

	// projs are every projection, for replay.
	projs func() []runner.Projection
	now   func() time.Time
	// progress reports long work (a replay): the daemon's log in serve,
	// standard error for a command alone; nil says nothing.
	progress func(format string, args ...any)
	// health is serve's readiness (nil for a command alone).
	health *health
	// ui is serve's web interface (nil for a command alone: 404 there).
	ui http.Handler
	// rules are the notification rules (projections/notify); notes
	// answers /api/notifications (cmd/jocasta/notify.go, nil for a
	// command alone); mcp is the MCP endpoint when server.mcp.enabled.
	rules *notify.Rules
	notes httpapi.Notifications
	mcp   http.Handler
	// mcpEnd ends the MCP sessions when serve stops (nil: MCP off).
	mcpEnd *mcp.Endpoint
	// metrics are serve's /metrics (nil for a command alone).
	metrics *serviceMetrics
}

// replayProgressEvery is how often a replay reports how far it got.
var replayProgressEvery = 2 * time.Second

func (c *core) TokenCreate(ctx context.Context, req tokenCreateReq) (tokenCreateResp, error) {
	tok, secret, err := c.commander().CreateToken(ctx, "cli", req.Actor, command.TokenRequest{Name: req.Name, Mode: req.Mode, Expires: req.Expires})
	if err != nil {
		return tokenCreateResp{}, cliError(err)
	}
	return tokenCreateResp{Token: tok, Secret: secret}, nil
}

func (c *core) TokenList(ctx context.Context) ([]projections.Token, error) {
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return nil, err
	}
	return c.access.Tokens(c.now()), nil
}

func (c *core) TokenRevoke(ctx context.Context, req idReq) error {
	return cliError(c.commander().RevokeToken(ctx, "cli", req.Actor, req.ID))
}

func (c *core) UserAdd(ctx context.Context, req userReq) error {
	return cliError(c.commander().AddUser(ctx, "cli", req.Actor, req.Name, req.Password))
}

func (c *core) UserPasswd(ctx context.Context, req userReq) error {
	return cliError(c.commander().ChangePassword(ctx, "cli", req.Actor, req.Name, req.Password))
}

func (c *core) UserList(ctx context.Context) ([]userInfo, error) {
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return nil, err
	}
	var out []userInfo
	for _, u := range c.access.Users() {
		out = append(out, userInfo{Name: u.Name, CreatedAt: u.CreatedAt})
	}
	return out, nil
}

func (c *core) UserRemove(ctx context.Context, req userReq) error {
	return cliError(c.commander().RemoveUser(ctx, "cli", req.Actor, req.Name))
}

func (c *core) LogVerify(ctx context.Context) (store.VerifyReport, error) {
	return c.st.Verify(ctx, nil)
}

func (c *core) LogExport(ctx context.Context, req exportReq, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	err := c.st.Scan(ctx, c.st.First(), func(e events.Envelope) error {
		if !req.Since.IsZero() && e.Time.Before(req.Since) {
			return nil
		}
		if !req.Until.IsZero() && e.Time.After(req.Until) {
			return nil
		}
		return enc.Encode(shown(e, req.IncludeSecrets))
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// LogTail writes events from req.From (or the head) as they are appended,
// until ctx is done.
func (c *core) LogTail(ctx context.Context, req tailReq, w io.Writer) error {
	next := req.From
	if next == 0 {
		next = c.st.Head() + 1
	}
	enc := json.NewEncoder(w)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		evs, more, err := c.st.ReadChunk(nil, next, 1000)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := enc.Encode(shown(e, req.IncludeSecrets)); err != nil {
				return err
			}
			next = e.Seq + 1
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (c *core) Replay(ctx context.Context, req replayReq) (replayResp, error) {
	if req.Output == "" {
		return replayResp{}, userErrorf("replay needs an output file (the command line chooses one when --output is not given)")
	}
	if _, err := os.Stat(req.Output); err == nil {
		return replayResp{}, userErrorf("%s already exists; replay writes a fresh database", req.Output)
	} else if !errors.Is(err, os.ErrNotExist) {
		return replayResp{}, err
	}
	// A mistyped directory is not created behind the user's back.
	if fi, err := os.Stat(filepath.Dir(req.Output)); err != nil || !fi.IsDir() {
		return replayResp{}, userErrorf("the directory of --output %s does not exist; create it first or choose another path", req.Output)
	}
	var opts runner.Options
	if c.progress != nil {
		head, last := c.st.Head(), time.Now()
		opts.OnApplied = func(seq uint64) {
			if time.Since(last) < replayProgressEvery {
				return
			}
			last = time.Now()
			c.progress("replay: %d of %d events applied (%d%%)", seq, head, seq*100/max(head, 1))
		}
	}
	if err := runner.Replay(ctx, c.st, req.Output, req.Until, c.projs(), opts); err != nil {
		return replayResp{}, err
	}
	dst, err := store.Open(req.Output, store.Options{})
	if err != nil {
		return replayResp{}, err
	}
	defer dst.Close()
	return replayResp{Output: req.Output, Events: dst.Head()}, nil
}
