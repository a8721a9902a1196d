// Package dnsnodetest is a fake Technitium DNS Server web API
// (/api/apps/list and /api/logs/query), built from the reference notes
// (../shared/reference/dnsnode.md), with the recorded edge cases: every
// reply HTTP 200 with a status, apps chosen by name (several may keep
// query logs, a logger that cannot be queried), pages past the end
// answering the last page again, rows that shift when queries arrive
// between two pages, times written in the server's zone, an expired
// token, and faults.
package dnsnodetest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Entry is one query-log entry.
type Entry struct {
	Time         time.Time
	Client       string
	QName, QType string
	ResponseType string // default Recursive
	RCode        string // default NoError
	Answer       string
}

// App is one installed app.
type App struct {
	Name      string
	ClassPath string
	// QueryLogs says its log can be queried (isQueryLogs); a logger such
	// as Log Exporter only receives queries.
	QueryLogs bool
}

// DefaultApps is a server with the Sqlite query-log app and the Log
// Exporter.
func DefaultApps() []App {
	return []App{
		{Name: "Log Exporter", ClassPath: "LogExporter.App"},
		{Name: "Query Logs (Sqlite)", ClassPath: "QueryLogsSqlite.App", QueryLogs: true},
	}
}

// Fake is the server; use it as an http.Handler.
type Fake struct {
	// Token is the API token; "" accepts any.
	Token string
	Apps  []App
	// Zone is the zone the server writes times in: nil writes UTC with
	// Z, as current builds do.
	Zone *time.Location
	// BetweenPages, when set, is called after each logs/query page is
	// answered (new queries arriving while a reader pages).
	BetweenPages func(f *Fake)
	// Delay is how long a "slow" fault waits (or until the request ends).
	Delay time.Duration

	mu      sync.Mutex
	entries []Entry // oldest first, as the app stores them
	fault   string
	// Queries counts logs/query calls.
	Queries int
}

// Add appends entries.
func (f *Fake) Add(es ...Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(es...)
}

func (f *Fake) add(es ...Entry) {
	f.entries = append(f.entries, es...)
	slices.SortStableFunc(f.entries, func(a, b Entry) int { return a.Time.Compare(b.Time) })
}

// AddLocked appends entries from inside BetweenPages.
func (f *Fake) AddLocked(es ...Entry) { f.add(es...) }

// Fault makes every call fail: "token" (expired token), "denied",
// "500", "slow", "garbage"; "" clears it.
func (f *Fake) Fault(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = kind
}

func reply(w http.ResponseWriter, v map[string]any) {
	v["server"] = "dns1.lan"
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path != "/api/apps/list" && path != "/api/logs/query" {
		w.WriteHeader(http.StatusNotFound) // empty body
		return
	}
	f.mu.Lock()
	fault, delay := f.fault, f.Delay
	f.mu.Unlock()
	switch fault {
	case "token":
		reply(w, map[string]any{"status": "invalid-token", "errorMessage": "Invalid token or session expired."})
		return
	case "denied":
		reply(w, map[string]any{"status": "error", "errorMessage": "Access was denied."})
		return
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
		return
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(delay):
		}
		return
	case "garbage":
		_, _ = w.Write([]byte(`{"response":{"entries":[{"timestamp":`))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	}
	if f.Token != "" && tok != f.Token {
		reply(w, map[string]any{"status": "invalid-token", "errorMessage": "Invalid token or session expired."})
		return
	}
	if path == "/api/apps/list" {
		apps := []any{}
		for _, a := range f.Apps {
			apps = append(apps, map[string]any{"name": a.Name, "version": "9.1", "dnsApps": []any{map[string]any{
				"classPath": a.ClassPath, "description": "…", "isAppRecordRequestHandler": false, "isRequestController": false,
				"isAuthoritativeRequestHandler": false, "isRequestBlockingHandler": false, "isQueryLogger": true,
				"isQueryLogs": a.QueryLogs, "isPostProcessor": false}}})
		}
		reply(w, map[string]any{"status": "ok", "response": map[string]any{"apps": apps}})
		return
	}
	f.Queries++
	f.logs(w, r)
	if f.BetweenPages != nil {
		f.BetweenPages(f)
	}
}

func (f *Fake) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	found := false
	for _, a := range f.Apps {
		if a.Name == q.Get("name") && a.ClassPath == q.Get("classPath") && a.QueryLogs {
			found = true
		}
	}
	if !found {
		reply(w, map[string]any{"status": "error", "errorMessage": "DNS application was not found: " + q.Get("name")})
		return
	}
	page, per := int64(1), 25
	if s := q.Get("pageNumber"); s != "" {
		page, _ = strconv.ParseInt(s, 10, 64)
	}
	if s := q.Get("entriesPerPage"); s != "" {
		per, _ = strconv.Atoi(s)
	}
	if per <= 0 {
		per = 25
	}
	desc := q.Get("descendingOrder") != "false"
	var start time.Time
	if s := q.Get("start"); s != "" {
		var err error
		// Parsed as UTC when it has no zone.
		if start, err = time.Parse("2006-01-02 15:04:05", s); err != nil {
			if start, err = time.Parse(time.RFC3339, s); err != nil {
				reply(w, map[string]any{"status": "error", "errorMessage": "String '" + s + "' was not recognized as a valid DateTime."})
				return
			}
		}
	}
	var match []Entry
	for _, e := range f.entries {
		if !start.IsZero() && e.Time.Before(start) {
			continue
		}
		match = append(match, e)
	}
	if desc {
		slices.Reverse(match)
	}
	total := int64(len(match))
	pages := (total + int64(per) - 1) / int64(per)
	if page <= 0 {
		page = 1
	}
	if page > pages || page < 0 {
		page = pages // past the end: the last page again
	}
	out := []any{}
	if pages > 0 {
		lo := (page - 1) * int64(per)
		hi := min(lo+int64(per), total)
		for k, e := range match[lo:hi] {
			rt, rc := e.ResponseType, e.RCode
			if rt == "" {
				rt = "Recursive"
			}
			if rc == "" {
				rc = "NoError"
			}
			ts := e.Time.UTC().Format("2006-01-02T15:04:05.999Z")
			if f.Zone != nil {
				ts = e.Time.In(f.Zone).Format("2006-01-02T15:04:05.999-07:00")
			}
			m := map[string]any{"rowNumber": total - lo - int64(k), "timestamp": ts, "clientIpAddress": e.Client, "protocol": "Udp",
				"responseType": rt, "rcode": rc, "qname": e.QName, "qtype": e.QType, "qclass": "IN", "answer": e.Answer}
			if e.QName == "" {
				m["qname"], m["qtype"], m["qclass"] = nil, nil, nil
			}
			if rt == "Recursive" {
				m["responseRtt"] = 21.4
			}
			out = append(out, m)
		}
	}
	reply(w, map[string]any{"status": "ok", "response": map[string]any{"pageNumber": page, "totalPages": pages, "totalEntries": total, "entries": out}})
}
