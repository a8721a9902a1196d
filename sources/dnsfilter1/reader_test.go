package dnsfilter1

import (
	"context"
	"net"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/dnsfilter1/dnsfilter1test"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func serve(t *testing.T, f *dnsfilter1test.Fake) Config {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	return Config{Enabled: true, EndpointConfig: sources.EndpointConfig{Host: host, Port: p, Timeout: 5 * time.Second}, Password: f.Password}
}

func newReader(t *testing.T, cfg Config, cursor string, opts sources.DNSReaderOptions) *Reader {
	t.Helper()
	opts.Source = "dnsfilter1:test"
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

func lab() *dnsfilter1test.Fake {
	f := &dnsfilter1test.Fake{Password: "correct horse"}
	f.Add(
		dnsfilter1test.Query{Time: t0.Add(5 * time.Minute), Type: "A", Domain: "Example.COM.", Status: "FORWARDED", Client: "192.0.2.50"},
		dnsfilter1test.Query{Time: t0.Add(6 * time.Minute), Type: "AAAA", Domain: "example.com", Status: "CACHE", Client: "192.0.2.50"},
		dnsfilter1test.Query{Time: t0.Add(7 * time.Minute), Type: "A", Domain: "ads.example.net", Status: "GRAVITY", Client: "192.0.2.51"},
		dnsfilter1test.Query{Time: t0.Add(65 * time.Minute), Type: "A", Domain: "example.com", Status: "FORWARDED", Client: "192.0.2.50"},
		dnsfilter1test.Query{Time: t0.Add(66 * time.Minute), Type: "A", Domain: "", Status: "FORWARDED", Client: "192.0.2.50"},
	)
	return f
}

func rowsText(rows []sources.DNSRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.Hour.Format("15") + " " + r.Client.String() + " " + r.Domain + " " + strconv.Itoa(int(r.Count)) + "/" + strconv.Itoa(int(r.Blocked)) + ";")
	}
	return b.String()
}

func TestReadIncremental(t *testing.T) {
	f := lab()
	cfg := serve(t, f)
	r := newReader(t, cfg, "", sources.DNSReaderOptions{Page: 2})
	read := poll(t, r)
	want := "10 192.0.2.50 example.com 2/0;10 192.0.2.51 ads.example.net 1/1;11 192.0.2.50 example.com 1/0;"
	if got := rowsText(read.Rows); got != want || read.Entries != 4 || read.Skipped != 1 || !read.Complete {
		t.Fatalf("first read: %s (entries %d skipped %d)\nwant %s", got, read.Entries, read.Skipped, want)
	}
	if f.Sessions() != 0 || f.Logins != 1 || f.Logouts != 1 {
		t.Fatalf("sessions left %d, logins %d, logouts %d: a read must sign out", f.Sessions(), f.Logins, f.Logouts)
	}
	// Nothing new: nothing counted twice.
	if read2 := poll(t, r); len(read2.Rows) != 0 || read2.Cursor != read.Cursor {
		t.Fatalf("second read counted again: %s, cursor %q → %q", rowsText(read2.Rows), read.Cursor, read2.Cursor)
	}
	f.Add(dnsfilter1test.Query{Time: t0.Add(70 * time.Minute), Type: "A", Domain: "new.example", Status: "FORWARDED", Client: "2001:db8::5"})
	read3 := poll(t, r)
	if got := rowsText(read3.Rows); got != "11 2001:db8::5 new.example 1/0;" {
		t.Fatalf("third read: %s", got)
	}
	// A restart continues from the cursor the log holds.
	f.Add(dnsfilter1test.Query{Time: t0.Add(71 * time.Minute), Type: "A", Domain: "after.example", Status: "FORWARDED", Client: "192.0.2.50"})
	r2 := newReader(t, cfg, read3.Cursor, sources.DNSReaderOptions{})
	if got := rowsText(poll(t, r2).Rows); got != "11 192.0.2.50 after.example 1/0;" {
		t.Fatalf("after a restart: %s", got)
	}
}

func TestReadBounds(t *testing.T) {
	f := lab()
	cfg := serve(t, f)
	// Back-fill bounded by retention: only the last hour (from 11:00).
	r := newReader(t, cfg, "", sources.DNSReaderOptions{Backfill: time.Hour})
	if got := rowsText(poll(t, r).Rows); got != "11 192.0.2.50 example.com 1/0;" {
		t.Fatalf("bounded back-fill: %s", got)
	}
	// At most MaxEntries, the newest, with a note.
	r = newReader(t, cfg, "", sources.DNSReaderOptions{MaxEntries: 2, Page: 10})
	read := poll(t, r)
	if read.Entries != 2 || len(read.Errors) != 1 || !strings.Contains(read.Errors[0], "bound of 2") {
		t.Fatalf("capped read: entries %d errors %q", read.Entries, read.Errors)
	}
}

func TestReadIDsStartAgain(t *testing.T) {
	f := lab()
	cfg := serve(t, f)
	r := newReader(t, cfg, "", sources.DNSReaderOptions{})
	poll(t, r)
	f.Reset()
	f.Add(
		dnsfilter1test.Query{Time: t0.Add(5 * time.Minute), Type: "A", Domain: "old.example", Client: "192.0.2.50"},
		dnsfilter1test.Query{Time: t0.Add(90 * time.Minute), Type: "A", Domain: "fresh.example", Client: "192.0.2.50"},
	)
	if got := rowsText(poll(t, r).Rows); got != "11 192.0.2.50 fresh.example 1/0;" {
		t.Fatalf("after the server's ids started again: %s", got)
	}
}

func TestNoPasswordAndPrivacy(t *testing.T) {
	f := lab()
	f.Password = ""
	cfg := serve(t, f)
	r := newReader(t, cfg, "", sources.DNSReaderOptions{})
	if read := poll(t, r); read.Entries != 4 || f.Logins != 0 {
		t.Fatalf("no password: entries %d, logins %d", read.Entries, f.Logins)
	}
	f.Private = true
	r = newReader(t, cfg, "", sources.DNSReaderOptions{})
	if read := poll(t, r); read.Entries != 0 || !read.Complete || len(read.Errors) != 1 || !strings.Contains(read.Errors[0], "privacy") {
		t.Fatalf("privacy level maximum: %+v", read)
	}
}

func TestBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *dnsfilter1test.Fake, cfg *Config)
		want  string
	}{
		{"wrong password", func(f *dnsfilter1test.Fake, cfg *Config) { cfg.Password = "wrong" }, "password is refused"},
		{"password needed", func(f *dnsfilter1test.Fake, cfg *Config) { cfg.Password = "" }, "has a password"},
		{"seats full (429)", func(f *dnsfilter1test.Fake, cfg *Config) { f.MaxSessions = -1 }, "every API session seat"},
		{"seats full (401)", func(f *dnsfilter1test.Fake, cfg *Config) { f.MaxSessions = -1; f.SeatsStatus = 401 }, "every API session seat"},
		{"server error", func(f *dnsfilter1test.Fake, cfg *Config) { f.Fault("queries", "500") }, "HTTP 500 internal: database busy"},
		{"garbage", func(f *dnsfilter1test.Fake, cfg *Config) { f.Fault("queries", "garbage") }, "malformed reply"},
		{"session dropped", func(f *dnsfilter1test.Fake, cfg *Config) { f.Fault("queries", "401") }, "session was refused"},
		{"closed port", func(f *dnsfilter1test.Fake, cfg *Config) { cfg.Port = closedPort(t) }, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			cfg := serve(t, f)
			tc.setup(f, &cfg)
			r := newReader(t, cfg, "", sources.DNSReaderOptions{})
			res, err := r.Poll(context.Background())
			if err == nil || res != nil {
				t.Fatalf("poll gave %v, %v; want an error", res, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "correct horse") {
				t.Fatalf("the error carries the password: %v", err)
			}
			if f.Sessions() != 0 {
				t.Fatalf("a failed read left %d sessions open", f.Sessions())
			}
		})
	}
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

func TestParseEntry(t *testing.T) {
	p, err := parseQueries([]byte(`{"queries":[{"id":52011,"time":1714557712.31,"type":"A","domain":"example.com","status":"GRAVITY_CNAME","client":{"ip":"192.0.2.50","name":"laptop.lan"}}],"cursor":52011}`))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Queries[0]
	at, ok := e.at()
	if !ok || !at.Equal(time.Date(2024, 5, 1, 10, 1, 52, 310000000, time.UTC)) || e.client() != netip.MustParseAddr("192.0.2.50") || !blocked(e.Status) {
		t.Fatalf("entry %+v at %v", e, at)
	}
}
