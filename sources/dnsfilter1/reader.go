package dnsfilter1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// maxReply bounds one reply read into memory.
const maxReply = 32 << 20

// logoutTimeout bounds the logout after a read, which runs even when the
// read's context has ended (a session left behind holds a seat).
const logoutTimeout = 3 * time.Second

// Reader reads one Pi-hole v6 server's query log (a sources.Poller): it
// signs in with the app password, reads the queries newer than its
// cursor newest first, and signs out after each read, so it never holds
// one of the server's API session seats between reads.
type Reader struct {
	cfg  Config
	opts sources.DNSReaderOptions
	base string
	http *http.Client

	loaded bool
	mark   sources.DNSMark
	n      uint64
}

// New returns the reader of one instance. cfg has been validated by the
// loader (host set, port filled in).
func New(cfg Config, opts sources.DNSReaderOptions) (*Reader, error) {
	if cfg.Host == "" {
		return nil, errors.New("dnsfilter1: host is required")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
		if cfg.SSL {
			cfg.Port = DefaultTLSPort
		}
	}
	opts.SetDefaults()
	return &Reader{
		cfg:  cfg,
		opts: opts,
		base: peerhttp.BaseURL(cfg.SSL, cfg.Host, cfg.Port, "/api"),
		http: peerhttp.Client(cfg.SSL && cfg.Insecure),
	}, nil
}

// Poll reads the queries since the last read (sources.Poller).
func (r *Reader) Poll(ctx context.Context) (sources.Result, error) {
	defer r.http.CloseIdleConnections()
	r.n++
	started := r.opts.Now().UTC()
	if !r.loaded {
		m, err := r.opts.RecordedMark(ctx)
		if err != nil {
			return nil, fmt.Errorf("dnsfilter1: %w", err)
		}
		r.mark, r.loaded = m, true
	}
	sid, err := r.login(ctx)
	if err != nil {
		return nil, err
	}
	if sid != "" {
		defer r.logout(ctx, sid)
	}
	read := &sources.DNSRead{ScanID: fmt.Sprintf("%d-%d", started.UnixNano(), r.n), Started: started}
	mark, err := r.read(ctx, sid, read)
	if err != nil {
		return nil, err
	}
	r.mark = mark
	read.Cursor = mark.String()
	read.Finished = r.opts.Now().UTC()
	read.Complete = true
	return read, nil
}

// read pages through the queries newer than the mark, newest first,
// under the cursor (largest id) of the first page, and aggregates them
// into read. It returns the new mark.
func (r *Reader) read(ctx context.Context, sid string, read *sources.DNSRead) (sources.DNSMark, error) {
	var agg sources.DNSAggregator
	now := r.opts.Now().UTC()
	var horizon time.Time
	if r.opts.Backfill > 0 {
		horizon = now.Add(-r.opts.Backfill)
	}
	from := r.mark.At
	if from.IsZero() || from.Before(horizon) {
		from = horizon
	}
	soft := sources.DNSSoftDeadline(ctx)
	mark := r.mark
	var cursor uint64
	reset := false
	page := r.opts.Page
	for start := 0; ; start += page {
		if start > 0 && !soft.IsZero() && time.Now().After(soft) {
			read.Errors = append(read.Errors, fmt.Sprintf("the read stopped near its timeout after %d entries: older entries since the last read were not read (raise timeout)", agg.Entries()))
			break
		}
		p, err := r.queries(ctx, sid, from, start, cursor)
		if err != nil {
			return r.mark, err
		}
		if start == 0 {
			if p.Cursor == nil {
				read.Errors = append(read.Errors, "the server's privacy level hides every query (misc.privacylevel): nothing to count")
				break
			}
			cursor = *p.Cursor
			if r.mark.ID > 0 && cursor < r.mark.ID {
				// The server's ids started again (its database was
				// replaced): the time alone tells what was counted.
				reset = true
				mark = sources.DNSMark{At: r.mark.At}
			}
		}
		done := false
		for i := range p.Queries {
			e := &p.Queries[i]
			t, ok := e.at()
			if !ok {
				agg.Skip()
				continue
			}
			if !horizon.IsZero() && t.Before(horizon) {
				done = true
				break
			}
			if reset && !t.After(r.mark.At) || !reset && r.mark.Counted(t, e.ID, 0) {
				done = true
				break
			}
			agg.Add(t, e.client(), e.Domain, blocked(e.Status), nil)
			mark = mark.Advance(t, e.ID, 0)
			if agg.Entries() >= r.opts.MaxEntries {
				read.Errors = append(read.Errors, fmt.Sprintf("the read stopped at its bound of %d entries: older entries since the last read were not read", r.opts.MaxEntries))
				done = true
				break
			}
		}
		if done || len(p.Queries) < page {
			break
		}
	}
	read.Entries, read.Skipped, read.Rows = agg.Entries(), agg.Skipped(), agg.Rows()
	return mark, nil
}

// queries asks for one page.
func (r *Reader) queries(ctx context.Context, sid string, from time.Time, start int, cursor uint64) (*queriesPage, error) {
	q := url.Values{}
	q.Set("length", strconv.Itoa(r.opts.Page))
	q.Set("start", strconv.Itoa(start))
	if !from.IsZero() {
		q.Set("from", strconv.FormatFloat(float64(from.UnixMicro())/1e6, 'f', 6, 64))
	}
	if cursor > 0 {
		q.Set("cursor", strconv.FormatUint(cursor, 10))
	}
	status, body, err := r.do(ctx, http.MethodGet, "/queries?"+q.Encode(), sid, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, apiError("queries", status, body, r.cfg.Password != "")
	}
	return parseQueries(body)
}

// login signs in with the password; "" without one (a server with no
// password set needs no session).
func (r *Reader) login(ctx context.Context) (string, error) {
	if r.cfg.Password == "" {
		return "", nil
	}
	b, err := json.Marshal(map[string]string{"password": r.cfg.Password})
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	status, body, err := r.do(ctx, http.MethodPost, "/auth", "", b)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", apiError("auth", status, body, true)
	}
	var a authReply
	if err := json.Unmarshal(body, &a); err != nil {
		return "", fmt.Errorf("auth: malformed reply: %s", peerhttp.Clean(err.Error()))
	}
	if !a.Session.Valid {
		return "", errors.New("auth: the server did not open a session: check password (an app password of the server)")
	}
	if a.Session.SID == nil {
		return "", nil // no password set on the server
	}
	return *a.Session.SID, nil
}

// logout closes the session, so that it does not hold one of the
// server's seats until it expires. It runs after the read, with its own
// short deadline even when ctx has ended.
func (r *Reader) logout(ctx context.Context, sid string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), logoutTimeout)
	defer cancel()
	status, _, err := r.do(lctx, http.MethodDelete, "/auth", sid, nil)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// Not the read's timeout setting: the logout's own bound.
		r.opts.Log.Warn("dnsfilter1: logout got no answer within " + logoutTimeout.String() + ": the session holds a seat until it expires")
	case err != nil:
		r.opts.Log.Warn("dnsfilter1: logout failed: the session holds a seat until it expires", "err", err.Error())
	case status != http.StatusNoContent && status != http.StatusOK && status != http.StatusNotFound:
		r.opts.Log.Warn("dnsfilter1: logout refused: the session holds a seat until it expires", "status", status)
	}
}

// do sends one request and reads its reply (at most maxReply bytes).
func (r *Reader) do(ctx context.Context, method, path, sid string, body []byte) (int, []byte, error) {
	what := path
	if i := bytes.IndexByte([]byte(path), '?'); i >= 0 {
		what = path[:i]
	}
	what = what[1:]
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if sid != "" {
		req.Header.Set("X-FTL-SID", sid)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, peerhttp.Explain(ctx, what, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return 0, nil, peerhttp.Explain(ctx, what, err)
	}
	if len(b) > maxReply {
		return 0, nil, fmt.Errorf("%s: reply larger than %d MiB: refused", what, maxReply>>20)
	}
	return resp.StatusCode, b, nil
}

// apiError explains an error reply in words an admin acts on.
func apiError(what string, status int, body []byte, withPassword bool) error {
	var e errorReply
	_ = json.Unmarshal(body, &e)
	key, msg := "", ""
	if e.Error != nil {
		key, msg = peerhttp.Clean(e.Error.Key), peerhttp.Clean(e.Error.Message)
	}
	switch {
	case key == "api_seats_exceeded":
		return fmt.Errorf("%s: HTTP %d: every API session seat of the server is taken (its webserver.api.max_sessions): close sessions on its web interface or raise that setting; jocasta signs out after each read", what, status)
	case key == "rate_limiting":
		return fmt.Errorf("%s: HTTP %d: the server rate-limits logins after failed attempts: check password and wait", what, status)
	case status == http.StatusUnauthorized && what == "auth":
		return fmt.Errorf("%s: HTTP 401: the password is refused: set password to an app password of the server", what)
	case status == http.StatusUnauthorized && !withPassword:
		return fmt.Errorf("%s: HTTP 401: the server has a password: set password to one of its app passwords", what)
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: HTTP 401: the session was refused", what)
	case status == http.StatusNotFound:
		return fmt.Errorf("%s: HTTP 404: no such API: is this a Pi-hole of version 6 or later on this port?", what)
	}
	out := fmt.Sprintf("%s: HTTP %d", what, status)
	if key != "" {
		out += " " + key
	}
	if msg != "" {
		out += ": " + msg
	}
	return errors.New(out)
}
