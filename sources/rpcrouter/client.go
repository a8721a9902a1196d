package rpcrouter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// MaxReply is the largest reply of one call read into memory.
const MaxReply = 32 << 20

// nullSession is rpcd's anonymous session, which may only log in.
const nullSession = "00000000000000000000000000000000"

// JSON-RPC error codes of uhttpd (reference §2).
const (
	codeAccessDenied   = -32002
	codeObjectNotFound = -32000
	codeTimeout        = -32003
)

// ubus status codes, the first element of a result (reference §2).
const (
	statusOK               = 0
	statusInvalidArgument  = 2
	statusMethodNotFound   = 3
	statusNotFound         = 4
	statusNoData           = 5
	statusPermissionDenied = 6
)

var statusText = map[int]string{
	1: "invalid command", 2: "invalid argument", 3: "method not found", 4: "not found", 5: "no data",
	6: "permission denied", 7: "timeout", 8: "not supported", 9: "unknown error", 10: "connection failed",
	11: "out of memory", 12: "parse error", 13: "system error",
}

// client calls ubus over uhttpd's /ubus JSON-RPC endpoint, one call at a
// time (uhttpd serves few requests at once), with an rpcd session it
// keeps across reads.
type client struct {
	url        string
	user, pass string
	http       *http.Client
	sid        string
	id         atomic.Int64
}

func newClient(c Config) *client {
	return &client{
		url:  peerhttp.BaseURL(c.SSL, c.Host, c.Port, "/ubus"),
		user: c.User,
		pass: c.Password,
		http: peerhttp.Client(c.SSL && c.Insecure),
	}
}

// rpcError is a JSON-RPC error (before the call was made).
type rpcError struct {
	Call    string
	Code    int
	Message string
}

func (e *rpcError) Error() string {
	msg := fmt.Sprintf("%s: JSON-RPC error %d %s", e.Call, e.Code, e.Message)
	switch e.Code {
	case codeAccessDenied:
		msg += " (the login's ACL must grant it: see the rpcd ACL file in the README)"
	case codeObjectNotFound:
		msg += " (not installed, or not granted by the login's ACL)"
	}
	return msg
}

// statusError is a ubus call that returned a non-zero status.
type statusError struct {
	Call   string
	Status int
}

func (e *statusError) Error() string {
	t := statusText[e.Status]
	if t == "" {
		t = "status " + strconv.Itoa(e.Status)
	}
	msg := fmt.Sprintf("%s: %s", e.Call, t)
	if e.Status == statusPermissionDenied {
		msg += " (the login's ACL must grant it: see the rpcd ACL file in the README)"
	}
	return msg
}

// sessionGone reports the reply rpcd gives to a call on an expired or
// unknown session (the same as an ACL denial: reference §3).
func sessionGone(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && re.Code == codeAccessDenied
}

// fatal reports an error after which no other call can succeed.
func fatal(err error) bool {
	var ne *peerhttp.NetError
	var le *loginError
	return errors.As(err, &ne) || errors.As(err, &le)
}

// loginError is a refused login.
type loginError struct{ msg string }

func (e *loginError) Error() string { return e.msg }

// login opens a session.
func (c *client) login(ctx context.Context) error {
	var reply struct {
		Session string `json:"ubus_rpc_session"`
		SID     string `json:"sid"` // very old rpcd
	}
	err := c.raw(ctx, nullSession, "session", "login", map[string]any{"username": c.user, "password": c.pass}, &reply)
	var se *statusError
	switch {
	case errors.As(err, &se) && (se.Status == statusPermissionDenied || se.Status == statusInvalidArgument):
		return &loginError{msg: "session.login: refused (check user and password, and the login in /etc/config/rpcd)"}
	case err != nil:
		return err
	}
	sid := reply.Session
	if sid == "" {
		sid = reply.SID
	}
	if sid == "" || len(sid) > 64 {
		return &loginError{msg: "session.login: the reply carries no session id"}
	}
	c.sid = sid
	return nil
}

// call makes one call on the session, logging in first when there is
// none, and once again when the session has expired.
func (c *client) call(ctx context.Context, object, method string, args any, out any) error {
	if c.sid == "" {
		if err := c.login(ctx); err != nil {
			return err
		}
	}
	err := c.raw(ctx, c.sid, object, method, args, out)
	if sessionGone(err) {
		// Expired (300 s idle by default) or a real ACL denial: log in
		// again and retry once; a second denial is the ACL's.
		c.sid = ""
		if lerr := c.login(ctx); lerr != nil {
			return lerr
		}
		err = c.raw(ctx, c.sid, object, method, args, out)
	}
	return err
}

// raw makes one JSON-RPC "call" and decodes the data of its result into
// out. A result with no data element leaves out as it is.
func (c *client) raw(ctx context.Context, sid, object, method string, args any, out any) error {
	name := object + "." + method
	if args == nil {
		args = struct{}{}
	}
	id := c.id.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "call", "params": []any{sid, object, method, args}})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return peerhttp.Explain(ctx, name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxReply+1))
	if err != nil {
		return peerhttp.Explain(ctx, name, err)
	}
	if len(data) > MaxReply {
		return fmt.Errorf("%s: reply larger than %d MiB: refused", name, MaxReply>>20)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d %s: is the ubus endpoint served at /ubus (package uhttpd-mod-ubus)?", name, resp.StatusCode, peerhttp.Clean(http.StatusText(resp.StatusCode)))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" && mt != "text/json" && mt != "text/plain" {
			return fmt.Errorf("%s: the reply is %s, not JSON: is the ubus endpoint served at /ubus (package uhttpd-mod-ubus)?", name, peerhttp.Clean(mt))
		}
	}
	return decodeReply(name, data, out)
}

// decodeReply reads a JSON-RPC reply: an error, or a result of [status]
// or [status, data] whose data is decoded into out.
func decodeReply(name string, data []byte, out any) error {
	var reply struct {
		Result []json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return fmt.Errorf("%s: malformed reply: %s", name, peerhttp.Clean(err.Error()))
	}
	if reply.Error != nil {
		return &rpcError{Call: name, Code: reply.Error.Code, Message: peerhttp.Clean(reply.Error.Message)}
	}
	if len(reply.Result) == 0 {
		return fmt.Errorf("%s: malformed reply: no result", name)
	}
	var status int
	if err := json.Unmarshal(reply.Result[0], &status); err != nil {
		return fmt.Errorf("%s: malformed reply: the status is not a number", name)
	}
	if status != statusOK {
		return &statusError{Call: name, Status: status}
	}
	if len(reply.Result) < 2 || out == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Result[1], out); err != nil {
		return fmt.Errorf("%s: malformed reply: %s", name, peerhttp.Clean(err.Error()))
	}
	return nil
}
