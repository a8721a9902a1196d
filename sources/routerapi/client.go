package routerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// MaxTable is the largest reply of one table read: RouterOS has no
// paging, so a table comes whole; a bigger reply is refused with a
// reason rather than read into memory.
const MaxTable = 32 << 20

// client speaks the REST API: GET /rest/<menu>, HTTP Basic on every
// request, one kept-alive connection (the router logs a login per
// connection).
type client struct {
	base       string // scheme://host:port/rest
	user, pass string
	http       *http.Client
}

func newClient(c Config) *client {
	return &client{
		base: peerhttp.BaseURL(c.SSL, c.Host, c.Port, "/rest"),
		user: c.User,
		pass: c.Password,
		http: peerhttp.Client(c.SSL && c.Insecure),
	}
}

// apiError is a reply with an error status, in RouterOS's shape
// {"error":400,"message":"Bad Request","detail":"..."}.
type apiError struct {
	Menu    string
	Status  int
	Message string
	Detail  string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Menu, e.Status)
	if e.Message != "" {
		msg += " " + e.Message
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	switch {
	case e.Status == http.StatusUnauthorized:
		msg += " (check user and password, and that the user's group has the read, api and rest-api policies)"
	case strings.Contains(e.Detail, "not allowed") || strings.Contains(e.Detail, "permissions"):
		msg += " (the user's group needs the read, api and rest-api policies)"
	}
	return msg
}

// notInstalled reports a menu the router does not have (a package not
// installed, such as wifi on a router with the legacy wireless package).
func notInstalled(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusBadRequest && strings.Contains(ae.Detail, "no such command")
}

// fatal reports an error after which no other table can be read either:
// credentials refused, or the peer not reachable at all.
func fatal(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusUnauthorized
	}
	var ne *peerhttp.NetError
	return errors.As(err, &ne)
}

// get reads one menu into out (a slice for a table, a struct for a
// settings menu such as system/identity).
func (c *client) get(ctx context.Context, menu string, proplist string, out any) error {
	u := c.base + "/" + menu
	if proplist != "" {
		u += "?.proplist=" + url.QueryEscape(proplist)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", menu, err)
	}
	req.SetBasicAuth(c.user, c.pass)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return peerhttp.Explain(ctx, menu, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxTable+1))
	if err != nil {
		return peerhttp.Explain(ctx, menu, err)
	}
	if len(body) > MaxTable {
		return fmt.Errorf("%s: reply larger than %d MiB: refused", menu, MaxTable>>20)
	}
	if resp.StatusCode >= 400 {
		ae := &apiError{Menu: menu, Status: resp.StatusCode}
		var eb struct {
			Message string    `json:"message"`
			Detail  rosString `json:"detail"`
		}
		if json.Unmarshal(body, &eb) == nil {
			ae.Message, ae.Detail = peerhttp.Clean(eb.Message), peerhttp.Clean(string(eb.Detail))
		} else {
			ae.Message = http.StatusText(resp.StatusCode)
		}
		return ae
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return fmt.Errorf("%s: the reply is %s, not JSON: is the REST API served on this port (RouterOS 7.1 or later, www or www-ssl service)?", menu, peerhttp.Clean(mt))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s: malformed reply: %s", menu, peerhttp.Clean(err.Error()))
	}
	return nil
}

// rosString is a RouterOS value: a string in every reply, but numbers
// and booleans are taken as their text too, and null as empty, so that a
// reply from another version reads the same.
type rosString string

// UnmarshalJSON implements json.Unmarshaler.
func (s *rosString) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = rosString(v)
	case string(b) == "null":
		*s = ""
	case string(b) == "true" || string(b) == "false":
		*s = rosString(b)
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*s = rosString(b)
	default:
		return fmt.Errorf("a value of RouterOS must be a string, not %.20s", b)
	}
	return nil
}

func (s rosString) bool() bool { return s == "true" || s == "yes" }

// parseDuration reads a RouterOS time ("1w2d3h4m5s", "31s250ms", "453us",
// "00:00:20"); ok is false for "never" and anything else.
func parseDuration(s string) (time.Duration, bool) {
	if s == "" || s == "never" {
		return 0, false
	}
	if strings.Count(s, ":") == 2 {
		p := strings.Split(s, ":")
		h, e1 := strconv.Atoi(p[0])
		m, e2 := strconv.Atoi(p[1])
		sec, e3 := strconv.Atoi(p[2])
		if e1 != nil || e2 != nil || e3 != nil || h < 0 || m < 0 || sec < 0 {
			return 0, false
		}
		return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, true
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, false
		}
		n, _ := strconv.Atoi(s[:i])
		s = s[i:]
		j := 0
		for j < len(s) && (s[j] < '0' || s[j] > '9') {
			j++
		}
		var unit time.Duration
		switch s[:j] {
		case "w":
			unit = 7 * 24 * time.Hour
		case "d":
			unit = 24 * time.Hour
		case "h":
			unit = time.Hour
		case "m":
			unit = time.Minute
		case "s":
			unit = time.Second
		case "ms":
			unit = time.Millisecond
		case "us":
			unit = time.Microsecond
		default:
			return 0, false
		}
		s = s[j:]
		total += time.Duration(n) * unit
	}
	return total, true
}
