package dnsfilter2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// maxReply bounds one reply read into memory.
const maxReply = 32 << 20

// Reader reads one AdGuard Home server's query log (a sources.Poller):
// HTTP Basic on every call (no session is held), pages backwards from
// the newest entry with older_than, passed back verbatim, down to its
// cursor.
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
		return nil, errors.New("dnsfilter2: host is required")
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
		base: peerhttp.BaseURL(cfg.SSL, cfg.Host, cfg.Port, "/control"),
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
			return nil, fmt.Errorf("dnsfilter2: %w", err)
		}
		r.mark, r.loaded = m, true
	}
	read := &sources.DNSRead{ScanID: fmt.Sprintf("%d-%d", started.UnixNano(), r.n), Started: started}
	var agg sources.DNSAggregator
	var horizon time.Time
	if r.opts.Backfill > 0 {
		horizon = started.Add(-r.opts.Backfill)
	}
	soft := sources.DNSSoftDeadline(ctx)
	mark := r.mark
	older := ""
	var ans []netip.Addr
	for first := true; ; first = false {
		if !first && !soft.IsZero() && time.Now().After(soft) {
			read.Errors = append(read.Errors, fmt.Sprintf("the read stopped near its timeout after %d entries: older entries since the last read were not read (raise timeout)", agg.Entries()))
			break
		}
		p, err := r.page(ctx, older)
		if err != nil {
			return nil, err
		}
		done := false
		for i := range p.Data {
			e := &p.Data[i]
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
			if r.mark.Counted(t, 0, k) {
				agg.Skip()
				continue
			}
			ans = e.answers(ans)
			agg.Add(t, e.client(), e.Question.Name, e.blocked(), ans)
			mark = mark.Advance(t, 0, k)
			if agg.Entries() >= r.opts.MaxEntries {
				read.Errors = append(read.Errors, fmt.Sprintf("the read stopped at its bound of %d entries: older entries since the last read were not read", r.opts.MaxEntries))
				done = true
				break
			}
		}
		// An empty page with an oldest time only means that window of
		// the log had nothing: paging goes on until oldest is "".
		if done || p.Oldest == "" || p.Oldest == older {
			break
		}
		older = p.Oldest
	}
	r.mark = mark
	read.Entries, read.Skipped, read.Rows = agg.Entries(), agg.Skipped(), agg.Rows()
	read.Cursor = mark.String()
	read.Finished = r.opts.Now().UTC()
	read.Complete = true
	return read, nil
}

// page asks for one page older than older ("" for the newest).
func (r *Reader) page(ctx context.Context, older string) (*logPage, error) {
	const what = "querylog"
	q := url.Values{}
	q.Set("limit", strconv.Itoa(r.opts.Page))
	if older != "" {
		q.Set("older_than", older)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/querylog?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	if r.cfg.User != "" || r.cfg.Password != "" {
		req.SetBasicAuth(r.cfg.User, r.cfg.Password)
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
	switch {
	case resp.StatusCode == http.StatusUnauthorized && r.cfg.User == "":
		return nil, fmt.Errorf("%s: HTTP 401: the server has a login: set user and password", what)
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s: HTTP %d: user and password are refused", what, resp.StatusCode)
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%s: HTTP 429: the server rate-limits logins after failed attempts (retry after %s s): check user and password", what, peerhttp.Clean(resp.Header.Get("Retry-After")))
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: HTTP 404: no such API: is this AdGuard Home's web interface port?", what)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: HTTP %d: %s", what, resp.StatusCode, peerhttp.Clean(string(b)))
	}
	return parseLog(b)
}
