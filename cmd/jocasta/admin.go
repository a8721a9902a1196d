package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/runner"
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

// core is an open database with the projections the admin commands need.
type core struct {
	st  *store.Store
	run *runner.Runner
	// sync returns once the projections have applied seq: in serve the
	// running runner's WaitFor, for a command alone a CatchUp.
	sync   func(ctx context.Context, seq uint64) error
	access *access.Projection
	inv    *inventory.Inventory
	// projs are every projection, for replay.
	projs func() []runner.Projection
	now   func() time.Time
	// progress reports long work (a replay): the daemon's log in serve,
	// standard error for a command alone; nil says nothing.
	progress func(format string, args ...any)
	// health is serve's readiness (nil for a command alone).
	health *health
}

// replayProgressEvery is how often a replay reports how far it got.
var replayProgressEvery = 2 * time.Second

// errStale says the log moved past the head a decision was read at.
var errStale = errors.New("the log moved while deciding")

// decideTries bounds how often appendDecided re-reads after the log moved
// under it; each try waits for the projections, so a busy log settles
// within a few.
const decideTries = 20

// appendDecided appends the event decide returns (nil: nothing), deciding
// inside the append: decide reads the projections once they have applied
// the head, and the append goes through only if the head is still the
// same inside the write transaction, so what decide read was current
// (a no-op is not appended; a name checked free is still free). When the
// log moved, it reads again. It returns once the projections have applied
// what it appended.
func (c *core) appendDecided(ctx context.Context, decide func() (*events.Envelope, error)) error {
	for range decideTries {
		head := c.st.Head()
		if err := c.sync(ctx, head); err != nil {
			return fmt.Errorf("wait for projections: %w", err)
		}
		out, err := c.st.AppendFunc(ctx, func(tx *bolt.Tx) ([]events.Envelope, error) {
			if store.HeadTx(tx) != head {
				return nil, errStale
			}
			e, err := decide()
			if err != nil || e == nil {
				return nil, err
			}
			return []events.Envelope{*e}, nil
		})
		switch {
		case errors.Is(err, errStale):
			continue
		case errors.Is(err, store.ErrOutcomeUnknown), errors.Is(err, store.ErrFailed):
			return fmt.Errorf("%w: %w", projections.ErrWriteFailed, err)
		case err != nil:
			return err
		case len(out) == 0:
			return nil
		}
		if err := c.sync(ctx, out[len(out)-1].Seq); err != nil {
			return fmt.Errorf("wait for projections: %w", err)
		}
		return nil
	}
	return fmt.Errorf("the log kept moving while deciding (%d tries): retry", decideTries)
}

func (c *core) appendAndWait(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	out, err := c.st.Append(ctx, evs...)
	if errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, store.ErrFailed) {
		return nil, fmt.Errorf("%w: %w", projections.ErrWriteFailed, err)
	}
	if err != nil {
		return nil, err
	}
	if err := c.sync(ctx, out[len(out)-1].Seq); err != nil {
		return nil, fmt.Errorf("wait for projections: %w", err)
	}
	return out, nil
}

func (c *core) TokenCreate(ctx context.Context, req tokenCreateReq) (tokenCreateResp, error) {
	name := strings.TrimSpace(req.Name)
	if err := access.ValidateTokenName(name); err != nil {
		return tokenCreateResp{}, userErrorf("token name %q: %v", name, err)
	}
	if req.Mode != events.ModeRead && req.Mode != events.ModeReadWrite {
		return tokenCreateResp{}, userErrorf("token mode %q: want read or read_write", req.Mode)
	}
	now := c.now().UTC()
	exp, err := access.ParseExpiry(req.Expires, now)
	if err != nil {
		return tokenCreateResp{}, userErrorf("token expiry %q: want never, 30d, 90d or 1y", req.Expires)
	}
	secret, sum := access.NewTokenSecret()
	id := access.TokenID()
	// The name is checked free inside the append: two creations with one
	// name cannot both pass.
	err = c.appendDecided(ctx, func() (*events.Envelope, error) {
		if c.access.TokenNameTaken(name) {
			return nil, userErrorf("a token named %q already exists; revoke it or choose another name", name)
		}
		e, err := events.New(events.KindTokenCreated, events.TokenCreated{TokenID: id, Name: name, Mode: req.Mode, ExpiresAt: exp, SecretSHA256: sum}, now)
		if err != nil {
			return nil, err
		}
		e.Source, e.Actor, e.Stream = "cli", req.Actor, "token/"+id
		return &e, nil
	})
	if err != nil {
		return tokenCreateResp{}, err
	}
	tok, err := c.access.Token(id)
	if err != nil {
		return tokenCreateResp{}, fmt.Errorf("token %s missing after create: %w", id, err)
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
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return err
	}
	if _, err := c.access.Token(req.ID); err != nil {
		return userErrorf("no token with id %q (see jocasta token list)", req.ID)
	}
	e, err := events.New(events.KindTokenRevoked, events.TokenRevoked{TokenID: req.ID}, c.now())
	if err != nil {
		return err
	}
	e.Source, e.Actor, e.Stream = "cli", req.Actor, "token/"+req.ID
	_, err = c.appendAndWait(ctx, e)
	return err
}

func (c *core) userEvent(ctx context.Context, kind string, payload any, name, actor string) error {
	e, err := events.New(kind, payload, c.now())
	if err != nil {
		return err
	}
	e.Source, e.Actor, e.Stream = "cli", actor, "user/"+name
	_, err = c.appendAndWait(ctx, e)
	return err
}

func (c *core) UserAdd(ctx context.Context, req userReq) error {
	if err := access.ValidateUserName(req.Name); err != nil {
		return userError{err.Error()}
	}
	if err := access.ValidatePassword(req.Password); err != nil {
		return userError{err.Error()}
	}
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return err
	}
	if _, err := c.access.User(req.Name); err == nil {
		return userErrorf("user %q already exists; use jocasta user passwd to change the password", req.Name)
	}
	hash, err := access.HashPassword(req.Password)
	if err != nil {
		return err
	}
	return c.userEvent(ctx, events.KindUserAdded, events.UserAdded{Name: req.Name, PasswordHash: hash}, req.Name, req.Actor)
}

func (c *core) UserPasswd(ctx context.Context, req userReq) error {
	if err := access.ValidatePassword(req.Password); err != nil {
		return userError{err.Error()}
	}
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return err
	}
	if _, err := c.access.User(req.Name); err != nil {
		return userErrorf("no user %q (see jocasta user list)", req.Name)
	}
	hash, err := access.HashPassword(req.Password)
	if err != nil {
		return err
	}
	return c.userEvent(ctx, events.KindUserPasswordChanged, events.UserPasswordChanged{Name: req.Name, PasswordHash: hash}, req.Name, req.Actor)
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
	if err := c.sync(ctx, c.st.Head()); err != nil {
		return err
	}
	if _, err := c.access.User(req.Name); err != nil {
		return userErrorf("no user %q (see jocasta user list)", req.Name)
	}
	return c.userEvent(ctx, events.KindUserRemoved, events.UserRemoved{Name: req.Name}, req.Name, req.Actor)
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
		evs, err := c.st.Read(next, 1000)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := enc.Encode(shown(e, req.IncludeSecrets)); err != nil {
				return err
			}
			next = e.Seq + 1
		}
		if len(evs) == 1000 {
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
		return replayResp{}, userErrorf("replay needs --output FILE")
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
