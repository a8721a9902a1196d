package dnsnode

import (
	"context"
	"net"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/dnsnode/dnsnodetest"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

const token = "5d2c0fa1e91"

func serve(t *testing.T, f *dnsnodetest.Fake) Config {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	return Config{Enabled: true, EndpointConfig: sources.EndpointConfig{Host: host, Port: p, Timeout: 5 * time.Second}, Token: token}
}

func newReader(t *testing.T, cfg Config, cursor string, opts sources.DNSReaderOptions) *Reader {
	t.Helper()
	opts.Source = "dnsnode:test"
	opts.Cursor = func(context.Context, string) (string, error) { return cursor, nil }
	if opts.Now == nil {
		opts.Now = func() time.Time { return t0.Add(2 * time.Hour) }
	}
	r, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func poll(t *testing.T, r *Reader) *sources.DNSRead {
	t.Helper()
	res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return res.(*sources.DNSRead)
}

func lab() *dnsnodetest.Fake {
	f := &dnsnodetest.Fake{Token: token, Apps: dnsnodetest.DefaultApps()}
	f.Add(
		dnsnodetest.Entry{Time: t0.Add(5 * time.Minute), Client: "192.0.2.50", QName: "example.com", QType: "A", Answer: "93.184.215.14"},
		dnsnodetest.Entry{Time: t0.Add(6 * time.Minute), Client: "192.0.2.50", QName: "example.com", QType: "A", ResponseType: "Cached", Answer: "CNAME edge.example.net, 93.184.215.14, 93.184.215.15"},
		dnsnodetest.Entry{Time: t0.Add(7 * time.Minute), Client: "192.0.2.51", QName: "ads.example.net", QType: "A", ResponseType: "Blocked", RCode: "NxDomain"},
		dnsnodetest.Entry{Time: t0.Add(8 * time.Minute), Client: "192.0.2.51"}, // no question
		dnsnodetest.Entry{Time: t0.Add(61 * time.Minute), Client: "2001:db8::7", QName: "example.com", QType: "AAAA", Answer: "2001:db8::14"},
	)
	return f
}

func rowsText(rows []sources.DNSRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.Hour.Format("15") + " " + r.Client.String() + " " + r.Domain + " " + strconv.Itoa(int(r.Count)) + "/" + strconv.Itoa(int(r.Blocked)))
		for _, a := range r.Answers {
			b.WriteString(" " + a.String())
		}
		b.WriteString(";")
	}
	return b.String()
}

const want1 = "10 192.0.2.50 example.com 2/0 93.184.215.14 93.184.215.15;10 192.0.2.51 ads.example.net 1/1;11 2001:db8::7 example.com 1/0 2001:db8::14;"

func TestReadIncremental(t *testing.T) {
	f := lab()
	cfg := serve(t, f)
	r := newReader(t, cfg, "", sources.DNSReaderOptions{Page: 2})
	read := poll(t, r)
	if got := rowsText(read.Rows); got != want1 || read.Entries != 4 || read.Skipped != 1 {
		t.Fatalf("first read: %s (entries %d, skipped %d)\nwant %s", got, read.Entries, read.Skipped, want1)
	}
	if r2 := poll(t, r); len(r2.Rows) != 0 {
		t.Fatalf("second read counted again: %s", rowsText(r2.Rows))
	}
	// An entry in the same second as the newest: counted once.
	f.Add(dnsnodetest.Entry{Time: t0.Add(61 * time.Minute), Client: "192.0.2.50", QName: "same.example", QType: "A"})
	r3 := poll(t, r)
	if got := rowsText(r3.Rows); got != "11 192.0.2.50 same.example 1/0;" {
		t.Fatalf("entry at the boundary: %s", got)
	}
	f.Add(dnsnodetest.Entry{Time: t0.Add(70 * time.Minute), Client: "192.0.2.50", QName: "later.example", QType: "A"})
	if got := rowsText(poll(t, newReader(t, cfg, r3.Cursor, sources.DNSReaderOptions{})).Rows); got != "11 192.0.2.50 later.example 1/0;" {
		t.Fatalf("after a restart: %s", got)
	}
}

func TestServerZone(t *testing.T) {
	// A server writing its own zone (-05:00): the same rows, in UTC.
	f := lab()
	f.Zone = time.FixedZone("EST", -5*3600)
	if got := rowsText(poll(t, newReader(t, serve(t, f), "", sources.DNSReaderOptions{})).Rows); got != want1 {
		t.Fatalf("times in the server's zone:\n got %s\nwant %s", got, want1)
	}
}

func TestRowsShiftBetweenPages(t *testing.T) {
	// Queries arriving while the reader pages push rows down: the next
	// page repeats entries; none is counted twice, and the new ones are
	// left for the next read.
	f := lab()
	n := 0
	f.BetweenPages = func(f *dnsnodetest.Fake) {
		n++
		f.AddLocked(dnsnodetest.Entry{Time: t0.Add(100*time.Minute + time.Duration(n)*time.Second), Client: "192.0.2.60", QName: "arrived.example", QType: "A"})
	}
	r := newReader(t, serve(t, f), "", sources.DNSReaderOptions{Page: 2})
	if got := rowsText(poll(t, r).Rows); got != want1 {
		t.Fatalf("rows shifting between pages:\n got %s\nwant %s", got, want1)
	}
	f.BetweenPages = nil
	read := poll(t, r)
	if read.Entries != n {
		t.Fatalf("the next read counted %d arrivals, want %d (%s)", read.Entries, n, rowsText(read.Rows))
	}
}

func TestAppSelection(t *testing.T) {
	two := append(dnsnodetest.DefaultApps(), dnsnodetest.App{Name: "Query Logs (MySQL)", ClassPath: "QueryLogsMySql.App", QueryLogs: true})
	for _, tc := range []struct {
		name   string
		apps   []dnsnodetest.App
		logApp string
		want   string // error text, "" = reads
	}{
		{"the only app", dnsnodetest.DefaultApps(), "", ""},
		{"log_app picks one of two", two, "Query Logs (Sqlite)", ""},
		{"log_app in another case", two, "query logs (sqlite)", ""},
		{"two apps, no log_app", two, "", `several installed apps keep query logs ("Query Logs (Sqlite)", "Query Logs (MySQL)"): set log_app`},
		{"log_app not installed", two, "Query Logs (Postgres)", `log_app "Query Logs (Postgres)" is not an installed app`},
		{"a logger only", two[:1], "", "no installed app keeps a query log"},
		{"log_app names a logger", dnsnodetest.DefaultApps(), "Log Exporter", `log_app "Log Exporter" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			f.Apps = tc.apps
			cfg := serve(t, f)
			cfg.LogApp = tc.logApp
			res, err := newReader(t, cfg, "", sources.DNSReaderOptions{}).Poll(context.Background())
			if tc.want == "" {
				if err != nil || rowsText(res.(*sources.DNSRead).Rows) != want1 {
					t.Fatalf("poll: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("poll error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *dnsnodetest.Fake, cfg *Config)
		want  string
	}{
		{"wrong token", func(f *dnsnodetest.Fake, cfg *Config) { cfg.Token = "nope" }, "token is refused"},
		{"expired token", func(f *dnsnodetest.Fake, cfg *Config) { f.Fault("token") }, "token is refused"},
		{"no permission", func(f *dnsnodetest.Fake, cfg *Config) { f.Fault("denied") }, "permission to view logs"},
		{"server error", func(f *dnsnodetest.Fake, cfg *Config) { f.Fault("500") }, "HTTP 500"},
		{"garbage", func(f *dnsnodetest.Fake, cfg *Config) { f.Fault("garbage") }, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			cfg := serve(t, f)
			tc.setup(f, &cfg)
			res, err := newReader(t, cfg, "", sources.DNSReaderOptions{}).Poll(context.Background())
			if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("poll gave %v, %v; want an error saying %q", res, err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatalf("the error carries the token: %v", err)
			}
		})
	}
}
