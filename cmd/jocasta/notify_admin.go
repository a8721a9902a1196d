package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
)

// The notify commands' operations. `jocasta notify ...` carries them out
// on the database itself when serve does not run (notifyOps over a
// dispatcher of its own), and through the control socket when it does
// (socketAdmin → notifyServe → notifyOps over serve's running
// dispatcher). Either way, refusals are user errors whose sentences the
// CLI prints as they are: they cross the socket as text.

// notifier is what the notify commands need.
type notifier interface {
	NotifyList(ctx context.Context) ([]notify.View, error)
	NotifySet(ctx context.Context, req notifySetReq) (notify.View, error)
	NotifyTest(ctx context.Context, req notifyNameReq) (notify.Attempt, error)
	NotifyLedger(ctx context.Context, req notifyLedgerReq) (projections.Page[notify.Record], error)
	NotifyRedeliver(ctx context.Context, req notifyRedeliverReq) (notifyRedeliverResp, error)
}

type notifyNameReq struct {
	Name string `json:"name"`
}

type notifySetReq struct {
	Name  string              `json:"name"`
	Rules []events.NotifyRule `json:"rules"`
	// Actor is filled in by the control socket from its peer's uid.
	Actor string `json:"actor"`
}

func (r *notifySetReq) setActor(a string) { r.Actor = a }

type notifyLedgerReq struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Limit int    `json:"limit"`
	// Cursor is the next_cursor of the page before.
	Cursor string `json:"cursor,omitempty"`
}

type notifyRedeliverReq struct {
	Name string `json:"name"`
	// ID is one dead record's id; "" re-delivers every dead record.
	ID string `json:"id"`
}

type notifyRedeliverResp struct {
	Destination string `json:"destination"`
	Queued      int    `json:"queued"`
	// Live is true when a running serve was told: it delivers them now.
	Live bool `json:"live"`
}

// notifyOps carries the operations out on a dispatcher: serve's running
// one (live) or a command's own, which never runs.
type notifyOps struct {
	n    *notifications
	live bool
}

// noDestination is the refusal for a name that is not configured.
func noDestination(name string) error {
	return userErrorf("no destination notify.%s in the configuration (see jocasta notify list)", name)
}

// notifyErr turns an unknown destination into its user error.
func notifyErr(name string, err error) error {
	if errors.Is(err, projections.ErrNotFound) {
		return noDestination(name)
	}
	if errors.Is(err, notify.ErrDisabled) {
		return userErrorf("notify.%s has enabled: false, so nothing is sent to it: set notify.%s.enabled to true (or remove it) and restart serve", name, name)
	}
	return err
}

func (o *notifyOps) NotifyList(ctx context.Context) ([]notify.View, error) {
	return o.n.Destinations(ctx)
}

func (o *notifyOps) NotifySet(ctx context.Context, req notifySetReq) (notify.View, error) {
	if req.Actor == "" {
		return notify.View{}, userErrorf("notify set: no actor")
	}
	if req.Rules == nil {
		req.Rules = []events.NotifyRule{}
	}
	v, err := o.n.SetRules(ctx, req.Actor, req.Name, req.Rules)
	var inv *command.Invalid
	if errors.As(err, &inv) {
		return notify.View{}, userErrorf("%v", inv)
	}
	return v, notifyErr(req.Name, err)
}

func (o *notifyOps) NotifyTest(ctx context.Context, req notifyNameReq) (notify.Attempt, error) {
	a, err := o.n.Test(ctx, req.Name)
	return a, notifyErr(req.Name, err)
}

// ledgerStates are the states `notify ledger --state` takes ("" for all).
var ledgerStates = map[string]bool{"": true, notify.StatePending: true, notify.StateSent: true, notify.StateFiltered: true, notify.StateDead: true}

func (o *notifyOps) NotifyLedger(ctx context.Context, req notifyLedgerReq) (projections.Page[notify.Record], error) {
	var none projections.Page[notify.Record]
	if !ledgerStates[req.State] {
		return none, userErrorf("state %q: want pending, sent, filtered or dead", req.State)
	}
	if req.Limit < 1 || req.Limit > 1000 {
		return none, userErrorf("limit %d: want 1 to 1000", req.Limit)
	}
	page, err := o.n.Ledger(ctx, req.Name, notify.LedgerFilter{State: req.State, Limit: req.Limit, Cursor: req.Cursor})
	if errors.Is(err, notify.ErrBadCursor) {
		return none, userErrorf("--cursor %q: not a cursor notify ledger printed; start again without it", req.Cursor)
	}
	if err != nil {
		return none, notifyErr(req.Name, err)
	}
	if page.Items == nil {
		page.Items = []notify.Record{}
	}
	return page, nil
}

func (o *notifyOps) NotifyRedeliver(ctx context.Context, req notifyRedeliverReq) (notifyRedeliverResp, error) {
	k, err := o.n.Redeliver(ctx, req.Name, req.ID)
	switch {
	case errors.Is(err, notify.ErrNotDead):
		return notifyRedeliverResp{}, userErrorf("record %s of notify.%s is not dead: only dead records are re-delivered", req.ID, req.Name)
	case errors.Is(err, projections.ErrNotFound) && req.ID != "":
		if _, derr := o.n.dest(req.Name); derr == nil {
			return notifyRedeliverResp{}, userErrorf("notify.%s has no ledger record %s (see jocasta notify ledger %s --state dead)", req.Name, req.ID, req.Name)
		}
		return notifyRedeliverResp{}, noDestination(req.Name)
	case err != nil:
		return notifyRedeliverResp{}, notifyErr(req.Name, err)
	}
	return notifyRedeliverResp{Destination: req.Name, Queued: k, Live: o.live}, nil
}

// notifyServe is the control socket's side: serve's own notifications
// (built by startNotifications, the API's), with the CLI as the source of
// rules events. It is looked up at each request.
type notifyServe struct{ a admin }

func (s notifyServe) ops() (*notifyOps, error) {
	c, ok := s.a.(*core)
	if !ok {
		return nil, errors.New("notify: not available")
	}
	n, ok := c.notes.(*notifications)
	if !ok || n == nil {
		return nil, errors.New("notify: serve has no dispatcher")
	}
	cli := *n
	cli.source = "cli"
	return &notifyOps{n: &cli, live: true}, nil
}

func (s notifyServe) NotifyList(ctx context.Context) ([]notify.View, error) {
	o, err := s.ops()
	if err != nil {
		return nil, err
	}
	return o.NotifyList(ctx)
}

func (s notifyServe) NotifySet(ctx context.Context, req notifySetReq) (notify.View, error) {
	o, err := s.ops()
	if err != nil {
		return notify.View{}, err
	}
	return o.NotifySet(ctx, req)
}

func (s notifyServe) NotifyTest(ctx context.Context, req notifyNameReq) (notify.Attempt, error) {
	o, err := s.ops()
	if err != nil {
		return notify.Attempt{}, err
	}
	return o.NotifyTest(ctx, req)
}

func (s notifyServe) NotifyLedger(ctx context.Context, req notifyLedgerReq) (projections.Page[notify.Record], error) {
	o, err := s.ops()
	if err != nil {
		return projections.Page[notify.Record]{}, err
	}
	return o.NotifyLedger(ctx, req)
}

func (s notifyServe) NotifyRedeliver(ctx context.Context, req notifyRedeliverReq) (notifyRedeliverResp, error) {
	o, err := s.ops()
	if err != nil {
		return notifyRedeliverResp{}, err
	}
	return o.NotifyRedeliver(ctx, req)
}

// The client side: socketAdmin asks serve.

func (s *socketAdmin) NotifyList(ctx context.Context) ([]notify.View, error) {
	return call[[]notify.View](ctx, s, "notify/list", struct{}{})
}

func (s *socketAdmin) NotifySet(ctx context.Context, req notifySetReq) (notify.View, error) {
	return call[notify.View](ctx, s, "notify/set", req)
}

func (s *socketAdmin) NotifyTest(ctx context.Context, req notifyNameReq) (notify.Attempt, error) {
	return call[notify.Attempt](ctx, s, "notify/test", req)
}

func (s *socketAdmin) NotifyLedger(ctx context.Context, req notifyLedgerReq) (projections.Page[notify.Record], error) {
	raw, err := call[json.RawMessage](ctx, s, "notify/ledger", req)
	if err != nil {
		return projections.Page[notify.Record]{}, err
	}
	// A serve of a release before --cursor answers the records alone.
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		var items []notify.Record
		if err := json.Unmarshal(t, &items); err != nil {
			return projections.Page[notify.Record]{}, fmt.Errorf("control socket: decode answer to notify/ledger: %w", err)
		}
		return projections.Page[notify.Record]{Items: items}, nil
	}
	var page projections.Page[notify.Record]
	if err := json.Unmarshal(raw, &page); err != nil {
		return page, fmt.Errorf("control socket: decode answer to notify/ledger: %w", err)
	}
	return page, nil
}

func (s *socketAdmin) NotifyRedeliver(ctx context.Context, req notifyRedeliverReq) (notifyRedeliverResp, error) {
	return call[notifyRedeliverResp](ctx, s, "notify/redeliver", req)
}

// withNotifier gives the notify commands serve's notifications through
// the control socket while serve runs on the configuration's database,
// else the database itself with a dispatcher that is never run.
func withNotifier(e *env, cfgPath string, f func(n notifier) error) error {
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	if s, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg)); ok {
		return f(s)
	}
	c, err := openCore(e.ctx, cfg, nopLogger(), openExisting)
	if err != nil {
		return err
	}
	defer c.Close()
	disp, err := c.newDispatcher(cfg, nil)
	if err != nil {
		return userErrorf("%v", err)
	}
	return f(&notifyOps{n: &notifications{d: disp, rules: c.rules, cmd: c.commander(), source: "cli"}})
}

var (
	_ notifier = (*notifyOps)(nil)
	_ notifier = notifyServe{}
	_ notifier = (*socketAdmin)(nil)
)

// fmtAttempt is one attempt as the CLI prints it.
func fmtAttempt(a notify.Attempt) string {
	s := fmt.Sprintf("%d %.0fms", a.Status, a.LatencyMS)
	if a.Error != "" {
		s += " " + a.Error
	}
	return s
}
