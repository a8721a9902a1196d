package dnsnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// maxReply bounds one reply read into memory.
const maxReply = 32 << 20

// startSlack is how far before the cursor the server is asked to start:
// its start parameter has whole seconds.
const startSlack = time.Second

// Reader reads one Technitium DNS Server node's query log (a
// sources.Poller) through the app that keeps it (log_app, or the only
// installed app that can be queried), with an API token, newest first
// down to its cursor.
type Reader struct {
	cfg  Config
	opts sources.DNSReaderOptions
	base string
	http *http.Client

	app, classPath string // the chosen app, found at the first read
	loaded         bool
	mark           sources.DNSMark
	n              uint64
}

// New returns the reader of one instance. cfg has been validated by the
// loader (host set, port filled in).
func New(cfg Config, opts sources.DNSReaderOptions) (*Reader, error) {
	if cfg.Host == "" {
		return nil, errors.New("dnsnode: host is required")
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
		base: peerhttp.BaseURL(cfg.SSL, cfg.Host, cfg.Port, "/api/"),
		http: peerhttp.Client(cfg.SSL && cfg.Insecure),
	}, nil
}

// Poll reads the entries since the last read (sources.Poller).
func (r *Reader) Poll(ctx context.Context) (sources.Result, error) {
	defer r.http.CloseIdleConnections()
	r.n++
	started := r.opts.Now().UTC()
	if !r.loaded {
		m, err := r.opts.RecordedMark(ctx)
		if err != nil {
			return nil, fmt.Errorf("dnsnode: %w", err)
		}
		r.mark, r.loaded = m, true
	}
	if r.app == "" {
		if err := r.chooseApp(ctx); err != nil {
			return nil, err
		}
	}
	read := &sources.DNSRead{ScanID: fmt.Sprintf("%d-%d", started.UnixNano(), r.n), Started: started}
	mark, err := r.read(ctx, started, read)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			r.app = "" // the app may be gone: choose again next time
		}
		return nil, err
	}
	r.mark = mark
	read.Cursor = mark.String()
	read.Finished = r.opts.Now().UTC()
	read.Complete = true
	return read, nil
}

func (r *Reader) read(ctx context.Context, now time.Time, read *sources.DNSRead) (sources.DNSMark, error) {
	var agg sources.DNSAggregator
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
	// floor is the oldest entry this read has counted: when new queries
	// arrive between two pages, rows shift and a page repeats entries of
	// the one before; those are at or above the floor.
	var floor sources.DNSMark
	var ans []netip.Addr
	for pageNo := int64(1); ; pageNo++ {
		if pageNo > 1 && !soft.IsZero() && time.Now().After(soft) {
			read.Errors = append(read.Errors, fmt.Sprintf("the read stopped near its timeout after %d entries: older entries since the last read were not read (raise timeout)", agg.Entries()))
			break
		}
		q := url.Values{}
		q.Set("name", r.app)
		q.Set("classPath", r.classPath)
		q.Set("pageNumber", strconv.FormatInt(pageNo, 10))
		q.Set("entriesPerPage", strconv.Itoa(r.opts.Page))
		q.Set("descendingOrder", "true")
		if !from.IsZero() {
			q.Set("start", from.Add(-startSlack).UTC().Format("2006-01-02 15:04:05"))
		}
		var p *logPage
		body, err := r.call(ctx, "logs/query", q)
		if err == nil {
			p, err = parseLog(body)
		}
		if err != nil {
			return r.mark, err
		}
		done := false
		for i := range p.Entries {
			e := &p.Entries[i]
			t, ok := e.at()
			if !ok {
				agg.Skip()
				continue
			}
			if !horizon.IsZero() && t.Before(horizon) || t.Before(r.mark.At) {
				done = true
				break
			}
			k := e.key()
			if r.mark.Counted(t, 0, k) || !floor.At.IsZero() && (t.After(floor.At) || t.Equal(floor.At) && slices.Contains(floor.Keys, k)) {
				agg.Skip()
				continue
			}
			if t.Before(floor.At) || floor.At.IsZero() {
				floor = sources.DNSMark{At: t, Keys: []uint64{k}}
			} else {
				floor.Keys = append(floor.Keys, k)
			}
			ans = e.answers(ans)
			agg.Add(t, e.client(), str(e.QName), e.blocked(), ans)
			mark = mark.Advance(t, 0, k)
			if agg.Entries() >= r.opts.MaxEntries {
				read.Errors = append(read.Errors, fmt.Sprintf("the read stopped at its bound of %d entries: older entries since the last read were not read", r.opts.MaxEntries))
				done = true
				break
			}
		}
		// Past the last page the server answers the last page again.
		if done || len(p.Entries) == 0 || p.PageNumber >= p.TotalPages || pageNo >= p.TotalPages {
			break
		}
	}
	read.Entries, read.Skipped, read.Rows = agg.Entries(), agg.Skipped(), agg.Rows()
	return mark, nil
}

// chooseApp finds the app whose log is read: log_app when set, else the
// only installed app whose log can be queried.
func (r *Reader) chooseApp(ctx context.Context) error {
	body, err := r.call(ctx, "apps/list", nil)
	if err != nil {
		return err
	}
	var l appsList
	if err := json.Unmarshal(body, &l); err != nil {
		return fmt.Errorf("apps/list: malformed reply: %s", peerhttp.Clean(err.Error()))
	}
	type cand struct{ name, classPath string }
	var cands []cand
	for _, a := range l.Apps {
		for _, d := range a.DNSApps {
			if d.IsQueryLogs {
				cands = append(cands, cand{a.Name, d.ClassPath})
				break
			}
		}
	}
	names := make([]string, 0, len(cands))
	for _, c := range cands {
		names = append(names, strconv.Quote(peerhttp.Clean(c.name)))
	}
	switch want := strings.TrimSpace(r.cfg.LogApp); {
	case len(cands) == 0:
		return errors.New("apps/list: no installed app keeps a query log that can be read: install one such as \"Query Logs (Sqlite)\" from the server's app store")
	case want != "":
		for _, c := range cands {
			if c.name == want || strings.EqualFold(c.name, want) {
				r.app, r.classPath = c.name, c.classPath
				return nil
			}
		}
		return fmt.Errorf("apps/list: log_app %q is not an installed app whose query log can be read; those are %s", peerhttp.Clean(want), strings.Join(names, ", "))
	case len(cands) > 1:
		return fmt.Errorf("apps/list: several installed apps keep query logs (%s): set log_app to the one to read", strings.Join(names, ", "))
	}
	r.app, r.classPath = cands[0].name, cands[0].classPath
	return nil
}

// apiError is a reply whose status is not ok.
type apiError struct {
	what, status, msg string
}

func (e *apiError) Error() string {
	switch e.status {
	case "invalid-token":
		return e.what + ": the token is refused (expired or unknown): set token to one made with the server's Create API Token, for a user allowed to view logs"
	case "2fa-required":
		return e.what + ": the server asks for a second factor: use an API token (Create API Token) rather than a session"
	}
	out := e.what + ": the server says " + e.status
	if e.msg != "" {
		out += ": " + e.msg
	}
	if strings.Contains(strings.ToLower(e.msg), "access was denied") || strings.Contains(strings.ToLower(e.msg), "permission") {
		out += " (the token's user needs the permission to view logs and apps)"
	}
	return out
}

// call GETs one API path with the token and returns the response member
// of an ok reply.
func (r *Reader) call(ctx context.Context, what string, q url.Values) ([]byte, error) {
	u := r.base + what
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, peerhttp.Explain(ctx, what, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, peerhttp.Explain(ctx, what, err)
	}
	if len(b) > maxReply {
		return nil, fmt.Errorf("%s: reply larger than %d MiB: refused", what, maxReply>>20)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s: HTTP 404: no such API: is this a Technitium DNS Server's web service port?", what)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", what, resp.StatusCode)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%s: malformed reply: %s", what, peerhttp.Clean(err.Error()))
	}
	if env.Status != "ok" {
		return nil, &apiError{what: what, status: peerhttp.Clean(env.Status), msg: peerhttp.Clean(env.ErrorMessage)}
	}
	return env.Response, nil
}
