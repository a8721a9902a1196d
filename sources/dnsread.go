package sources

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DNSRead is one read of a DNS server's query log (the dnsnode,
// dnsfilter1 and dnsfilter2 kinds): the entries newer than the source's
// cursor, aggregated in memory into hourly rows per client and domain,
// never one row per query, and the cursor to continue from.
type DNSRead struct {
	ScanID   string
	Started  time.Time
	Finished time.Time
	// Complete is false for a read cut short; such a read carries no rows
	// and no cursor (the next read starts again from the old cursor).
	Complete bool
	// Errors are notes of a complete read (a back-fill cut at its bound)
	// or the failures of an incomplete one.
	Errors []string
	// Cursor is the source's restart point after this read, opaque to
	// everything but the kind that wrote it. The log keeps it: a restart
	// continues from the last one recorded.
	Cursor string
	// Entries counts the query-log entries aggregated into Rows, Skipped
	// those left out (no client address, no question name, already
	// counted at the cursor's boundary).
	Entries int
	Skipped int
	// Rows are sorted by (Hour, Client, Domain).
	Rows []DNSRow
}

// Scan implements Result.
func (r *DNSRead) Scan() ScanInfo {
	return ScanInfo{ID: r.ScanID, Started: r.Started, Finished: r.Finished, Complete: r.Complete, Errors: r.Errors}
}

// MaxDNSAnswers bounds the answer addresses kept per row.
const MaxDNSAnswers = 8

// DNSRow is the lookups of one client for one domain within one hour.
type DNSRow struct {
	// Hour is the start of the hour (UTC) the queries were asked in.
	Hour   time.Time
	Client netip.Addr
	// Domain is the question name, lower case, without the trailing dot.
	Domain string
	// Count is the number of queries; Blocked how many of them the server
	// said it blocked.
	Count   uint32
	Blocked uint32
	// Answers are the distinct addresses of the answers (A, AAAA), at
	// most MaxDNSAnswers, sorted.
	Answers []netip.Addr
}

type dnsKey struct {
	hour   int64
	client netip.Addr
	domain string
}

// DNSAggregator sums query-log entries into DNSRows. The zero value is
// ready to use; it is not safe for concurrent use.
type DNSAggregator struct {
	rows    map[dnsKey]*DNSRow
	entries int
	skipped int
}

// NormalizeDomain returns a question name as rows keep it: trimmed,
// lower case, without the trailing dot; "" when it is empty, the root,
// longer than 253 bytes or holds a control character or space.
func NormalizeDomain(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" || len(s) > 253 {
		return ""
	}
	lower := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f {
			return ""
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	if !lower {
		s = strings.ToLower(s)
	}
	return s
}

// Add counts one query of client for domain at t, blocked or not, with
// the addresses of its answer. An entry with no usable client or domain
// is counted as skipped.
func (a *DNSAggregator) Add(t time.Time, client netip.Addr, domain string, blocked bool, answers []netip.Addr) {
	domain = NormalizeDomain(domain)
	if !client.IsValid() || domain == "" || t.IsZero() {
		a.skipped++
		return
	}
	if a.rows == nil {
		a.rows = make(map[dnsKey]*DNSRow)
	}
	client = client.Unmap().WithZone("")
	h := t.Unix()
	h -= ((h % 3600) + 3600) % 3600
	k := dnsKey{hour: h, client: client, domain: domain}
	r := a.rows[k]
	if r == nil {
		r = &DNSRow{Hour: time.Unix(h, 0).UTC(), Client: client, Domain: domain}
		a.rows[k] = r
	}
	a.entries++
	r.Count++
	if blocked {
		r.Blocked++
	}
	for _, ip := range answers {
		if len(r.Answers) >= MaxDNSAnswers {
			break
		}
		ip = ip.Unmap().WithZone("")
		if ip.IsValid() && !slices.Contains(r.Answers, ip) {
			r.Answers = append(r.Answers, ip)
		}
	}
}

// Skip counts an entry left out before Add (a duplicate at the cursor).
func (a *DNSAggregator) Skip() { a.skipped++ }

// Entries is the number of entries added, Skipped the number left out.
func (a *DNSAggregator) Entries() int { return a.entries }

// Skipped is the number of entries left out.
func (a *DNSAggregator) Skipped() int { return a.skipped }

// Rows returns the rows sorted by (Hour, Client, Domain), each with its
// answers sorted.
func (a *DNSAggregator) Rows() []DNSRow {
	out := make([]DNSRow, 0, len(a.rows))
	for _, r := range a.rows {
		slices.SortFunc(r.Answers, func(x, y netip.Addr) int { return x.Compare(y) })
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y DNSRow) int {
		if c := x.Hour.Compare(y.Hour); c != 0 {
			return c
		}
		if c := x.Client.Compare(y.Client); c != 0 {
			return c
		}
		return cmp.Compare(x.Domain, y.Domain)
	})
	return out
}

// DNSMark is the cursor of the query-log kinds: the newest entry a read
// counted. Logs are read newest first down to it; an entry older than At
// was counted before, one at At is counted unless its key is in Keys (the
// entries at At already counted), and for a log with ids (ID > 0) an
// entry with an id at or below ID was counted.
type DNSMark struct {
	At   time.Time
	ID   uint64
	Keys []uint64
}

// maxMarkKeys bounds the boundary keys a mark keeps.
const maxMarkKeys = 256

// String encodes m: "v1 <unix ns> <id> <key>,<key>...", "" for the zero
// mark.
func (m DNSMark) String() string {
	if m.At.IsZero() && m.ID == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("v1 ")
	b.WriteString(strconv.FormatInt(m.At.UnixNano(), 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatUint(m.ID, 10))
	b.WriteByte(' ')
	for i, k := range m.Keys {
		if i >= maxMarkKeys {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(k, 36))
	}
	return b.String()
}

// ParseDNSMark decodes a mark String wrote; "" is the zero mark.
func ParseDNSMark(s string) (DNSMark, error) {
	var m DNSMark
	if s == "" {
		return m, nil
	}
	f := strings.Split(s, " ")
	if len(f) != 4 || f[0] != "v1" {
		return m, fmt.Errorf("cursor %.40q: not a query-log cursor of this build", s)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return m, fmt.Errorf("cursor %.40q: bad time", s)
	}
	if m.ID, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return m, fmt.Errorf("cursor %.40q: bad id", s)
	}
	if ns != 0 {
		m.At = time.Unix(0, ns).UTC()
	}
	if f[3] != "" {
		for _, k := range strings.Split(f[3], ",") {
			v, err := strconv.ParseUint(k, 36, 64)
			if err != nil {
				return m, fmt.Errorf("cursor %.40q: bad key", s)
			}
			m.Keys = append(m.Keys, v)
		}
	}
	return m, nil
}

// Counted reports whether an entry at t with key (or id, when the log
// has ids) was counted by the read that left m.
func (m DNSMark) Counted(t time.Time, id uint64, key uint64) bool {
	if m.ID > 0 && id > 0 {
		return id <= m.ID
	}
	switch {
	case m.At.IsZero():
		return false
	case t.Before(m.At):
		return true
	case t.After(m.At):
		return false
	}
	return slices.Contains(m.Keys, key)
}

// DNSEntryKey hashes the parts that tell entries at the same time apart
// (client, name, type, ...): FNV-1a, 64 bits.
func DNSEntryKey(parts ...string) uint64 {
	h := uint64(14695981039346656037)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return h
}

// Advance returns the mark after a read that saw an entry at t with id
// and key: the newest entry wins; entries at the same newest time add
// their keys.
func (m DNSMark) Advance(t time.Time, id, key uint64) DNSMark {
	t = t.UTC()
	if id > m.ID {
		m.ID = id
	}
	switch {
	case t.After(m.At):
		m.At = t
		m.Keys = []uint64{key}
	case t.Equal(m.At) && !slices.Contains(m.Keys, key) && len(m.Keys) < maxMarkKeys:
		m.Keys = append(slices.Clip(m.Keys), key)
	}
	return m
}

// Defaults of the query-log readers.
const (
	// DefaultDNSMaxEntries bounds the entries one read takes: a first
	// contact with a busy server back-fills at most this many (the
	// newest), and says so.
	DefaultDNSMaxEntries = 200_000
	// DefaultDNSPage is the entries asked per request.
	DefaultDNSPage = 1000
)

// DNSReaderOptions are what a query-log reader gets beside its Config.
type DNSReaderOptions struct {
	// Source is the instance's source name ("dnsnode:<name>").
	Source string
	// Cursor returns the restart point the log holds for Source (see
	// Env.Cursor); nil: start from nothing.
	Cursor func(ctx context.Context, source string) (string, error)
	// Backfill bounds how far back a first read goes (retention.dns);
	// 0: as far as the server holds.
	Backfill time.Duration
	// MaxEntries bounds the entries of one read; default
	// DefaultDNSMaxEntries.
	MaxEntries int
	// Page is the entries asked per request; default DefaultDNSPage.
	Page int
	// Log reports what a read notes; nil discards.
	Log *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// SetDefaults fills the zero fields.
func (o *DNSReaderOptions) SetDefaults() {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultDNSMaxEntries
	}
	if o.Page <= 0 {
		o.Page = DefaultDNSPage
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// DNSSoftDeadline is when a read stops asking for more pages: a little
// before ctx's deadline, so that what it has is kept rather than lost to
// the timeout. The zero time when ctx has none.
func DNSSoftDeadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	left := time.Until(d)
	return d.Add(-left / 5)
}

// RecordedMark reads from the log the restart point of the source's last
// read (Cursor); nil Cursor or none recorded: the zero mark (a first read
// back to Backfill). A cursor that does not parse is logged and read as
// none, so a reader is never stuck behind it.
func (o *DNSReaderOptions) RecordedMark(ctx context.Context) (DNSMark, error) {
	if o.Cursor == nil {
		return DNSMark{}, nil
	}
	s, err := o.Cursor(ctx, o.Source)
	if err != nil {
		return DNSMark{}, fmt.Errorf("the cursor of %s in the log: %w", o.Source, err)
	}
	m, err := ParseDNSMark(s)
	if err != nil {
		o.Log.Warn("the recorded cursor is not readable: starting from the back-fill bound", "err", err.Error())
		return DNSMark{}, nil
	}
	return m, nil
}
