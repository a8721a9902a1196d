package dnsfilter2

import (
	"context"
	"net"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/dnsfilter2/dnsfilter2test"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func serve(t *testing.T, f *dnsfilter2test.Fake) Config {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	return Config{Enabled: true, EndpointConfig: sources.EndpointConfig{Host: host, Port: p, Timeout: 5 * time.Second}, User: f.User, Password: f.Password}
}

func newReader(t *testing.T, cfg Config, cursor string, opts sources.DNSReaderOptions) *Reader {
	t.Helper()
	opts.Source = "dnsfilter2:test"
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

func lab() *dnsfilter2test.Fake {
	f := &dnsfilter2test.Fake{User: "inv", Password: "s3cret", Zone: time.FixedZone("CEST", 2*3600)}
	same := t0.Add(7*time.Minute + 123456789)
	f.Add(
		dnsfilter2test.Entry{Time: t0.Add(5 * time.Minute), Client: "192.0.2.50", Name: "example.com", Type: "A", Answers: []string{"93.184.215.14"}},
		dnsfilter2test.Entry{Time: t0.Add(6 * time.Minute), Client: "192.0.2.50", Name: "example.com", Type: "AAAA", Answers: []string{"2001:db8::14"}},
		dnsfilter2test.Entry{Time: same, Client: "192.0.2.51", Name: "ads.example.net", Type: "A", Reason: "FilteredBlackList"},
		dnsfilter2test.Entry{Time: same, Client: "192.0.2.52", Name: "ads.example.net", Type: "A", Reason: "FilteredBlockedService"},
		dnsfilter2test.Entry{Time: t0.Add(61 * time.Minute), Client: "192.0.2.50", Name: "example.com", Type: "A", Reason: "Rewrite", Answers: []string{"192.0.2.1"}},
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

func TestReadIncremental(t *testing.T) {
	f := lab()
	f.EmptyWindows = 1
	cfg := serve(t, f)
	r := newReader(t, cfg, "", sources.DNSReaderOptions{Page: 3})
	read := poll(t, r)
	want := "10 192.0.2.50 example.com 2/0 93.184.215.14 2001:db8::14;10 192.0.2.51 ads.example.net 1/1;10 192.0.2.52 ads.example.net 1/1;11 192.0.2.50 example.com 1/0 192.0.2.1;"
	if got := rowsText(read.Rows); got != want || !read.Complete {
		t.Fatalf("first read (times in +02:00, an empty window, paging to the end):\n got %s\nwant %s", got, want)
	}
	if r2 := poll(t, r); len(r2.Rows) != 0 {
		t.Fatalf("second read counted again: %s", rowsText(r2.Rows))
	}
	// A new entry at the very time of the newest one: counted once.
	f.Add(dnsfilter2test.Entry{Time: t0.Add(61 * time.Minute), Client: "192.0.2.53", Name: "example.com", Type: "A"})
	r3 := poll(t, r)
	if got := rowsText(r3.Rows); got != "11 192.0.2.53 example.com 1/0;" {
		t.Fatalf("entry at the boundary: %s", got)
	}
	// A restart continues from the cursor the log holds.
	f.Add(dnsfilter2test.Entry{Time: t0.Add(62 * time.Minute), Client: "192.0.2.50", Name: "later.example", Type: "A"})
	if got := rowsText(poll(t, newReader(t, cfg, r3.Cursor, sources.DNSReaderOptions{})).Rows); got != "11 192.0.2.50 later.example 1/0;" {
		t.Fatalf("after a restart: %s", got)
	}
}

func TestReadBounds(t *testing.T) {
	f := lab()
	cfg := serve(t, f)
	if got := rowsText(poll(t, newReader(t, cfg, "", sources.DNSReaderOptions{Backfill: time.Hour})).Rows); got != "11 192.0.2.50 example.com 1/0 192.0.2.1;" {
		t.Fatalf("bounded back-fill: %s", got)
	}
	read := poll(t, newReader(t, cfg, "", sources.DNSReaderOptions{MaxEntries: 3, Page: 2}))
	if read.Entries != 3 || len(read.Errors) != 1 {
		t.Fatalf("capped: %d entries, errors %q", read.Entries, read.Errors)
	}
}

func TestBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *dnsfilter2test.Fake, cfg *Config)
		want  string
	}{
		{"no credentials", func(f *dnsfilter2test.Fake, cfg *Config) { cfg.User, cfg.Password = "", "" }, "set user and password"},
		{"wrong password", func(f *dnsfilter2test.Fake, cfg *Config) { cfg.Password = "wrong" }, "refused"},
		{"server error", func(f *dnsfilter2test.Fake, cfg *Config) { f.Fault("500") }, "HTTP 500: internal error"},
		{"garbage", func(f *dnsfilter2test.Fake, cfg *Config) { f.Fault("garbage") }, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			cfg := serve(t, f)
			tc.setup(f, &cfg)
			res, err := newReader(t, cfg, "", sources.DNSReaderOptions{}).Poll(context.Background())
			if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("poll gave %v, %v; want an error saying %q", res, err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error carries the password: %v", err)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	f := lab()
	f.Delay = time.Hour
	f.Fault("slow")
	cfg := serve(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newReader(t, cfg, "", sources.DNSReaderOptions{}).Poll(ctx)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("a read past its timeout: %v", err)
	}
}

func TestFastPathMatchesEncodingJSON(t *testing.T) {
	for _, page := range []string{
		`{"data":[{"answer":[{"type":"A","value":"93.184.215.14","ttl":300},{"type":"SVCB","value":{"priority":1}}],"answer_dnssec":false,"cached":false,"client":"192.0.2.50","client_info":{"whois":{"city":"x"},"name":"laptop","disallowed_rule":"","disallowed":false},"client_proto":"","elapsedMs":"12.514","question":{"class":"IN","name":"example.com","type":"A","unicode_name":"example.com"},"reason":"NotFilteredNotFound","rules":[{"filter_list_id":1,"text":"||x^"}],"status":"NOERROR","time":"2024-05-01T12:22:41.537419101+02:00","upstream":"https://dns.example.net:443/dns-query","ecs":"1.2.3.0/24"}],"oldest":"2024-05-01T12:22:41.537419101+02:00"}`,
		`{"data":[],"oldest":""}`,
		` { "data" : [ null , { "time" : null , "answer" : null , "question" : null } ] , "oldest" : "x" , "extra" : [ 1.5e-3 , -0 , true , false ] } `,
	} {
		fp, err := fastLog([]byte(page))
		if err != nil {
			t.Fatalf("the fast path gave up on %s", page)
		}
		jp, err := parseLogJSON([]byte(page))
		if err != nil || !reflect.DeepEqual(norm(fp), norm(jp)) {
			t.Fatalf("fast %+v\njson %+v (%v)", fp, jp, err)
		}
	}
	// What it does not take as plainly valid goes to encoding/json.
	for _, page := range []string{
		`{"data":[{"Time":"x"}]}`,            // another case: encoding/json matches it
		`{"data":[{"time":"a\u0041"}]}`,      // an escape
		`{"data":[{"time":"a","time":"b"}]}`, // a duplicate
		`{"data":[{"time":5}]}`,              // a wrong type
		`{"data":[]} x`,                      // trailing data
		`{"data":[{"client":"\xff"}]}`,       // not UTF-8
		`{"data":[{"x":01}]}`,                // not a JSON number
	} {
		if _, err := fastLog([]byte(page)); err == nil {
			t.Errorf("the fast path took %s", page)
		}
	}
}

// Keys encoding/json would match by folding (long s to "s") and a trailing
// NUL are left to encoding/json.
func TestFastPathGivesUp(t *testing.T) {
	for _, page := range []string{`{"data":[{"reaſon":"FilteredBlackList"}]}`, "{}\x00"} {
		if _, err := fastLog([]byte(page)); err == nil {
			t.Errorf("the fast path took %q", page)
		}
	}
	if p, err := parseLogJSON([]byte(`{"data":[{"reaſon":"FilteredBlackList"}]}`)); err != nil || p.Data[0].Reason != "FilteredBlackList" {
		t.Fatalf("encoding/json no longer folds keys as the fast path assumes: %+v %v", p, err)
	}
}
