// Package dnsfilter2test is a fake AdGuard Home API (/control/querylog),
// built from the reference notes (../shared/reference/dnsfilter2.md),
// with the recorded edge cases: times written in the server's zone with
// nanoseconds, older_than paging that ends with an empty oldest, windows
// of the log with no match (empty data, oldest set), 401 with an empty
// body, and faults.
package dnsfilter2test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Entry is one query-log entry.
type Entry struct {
	Time    time.Time
	Client  string
	Name    string
	Type    string
	Reason  string   // default NotFilteredNotFound
	Answers []string // A/AAAA values
}

// Fake is the server; use it as an http.Handler (httptest.NewServer).
type Fake struct {
	// User and Password are the login; "" user: no login set.
	User, Password string
	// Zone is the server's local zone the times are written in (default
	// UTC).
	Zone *time.Location
	// EmptyWindows makes the first n paging requests (with older_than)
	// answer no data with oldest set, as a 50,000-line window without a
	// match does.
	EmptyWindows int
	// Delay is how long a "slow" fault waits (or until the request ends).
	Delay time.Duration

	mu      sync.Mutex
	entries []Entry // newest first
	fault   string
	// Requests counts querylog calls.
	Requests int
}

// Add adds entries.
func (f *Fake) Add(es ...Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, es...)
	slices.SortStableFunc(f.entries, func(a, b Entry) int { return b.Time.Compare(a.Time) })
}

// Fault makes every call fail: "500", "slow", "garbage"; "" clears it.
func (f *Fake) Fault(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = kind
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/control/querylog" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	fault, delay := f.fault, f.Delay
	f.mu.Unlock()
	switch fault {
	case "500":
		http.Error(w, "internal error: reading query log", http.StatusInternalServerError)
		return
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(delay):
		}
		return
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[{"time":`))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.User != "" {
		u, p, ok := r.BasicAuth()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized) // no body
			return
		}
		if u != f.User || p != f.Password {
			http.Error(w, "invalid username or password", http.StatusForbidden)
			return
		}
	}
	f.Requests++
	q := r.URL.Query()
	limit := 500
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "parsing params: limit", http.StatusBadRequest)
			return
		}
		limit = n
	}
	var older time.Time
	if s := q.Get("older_than"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			http.Error(w, "parsing params: older_than", http.StatusBadRequest)
			return
		}
		older = t
		if f.EmptyWindows > 0 {
			f.EmptyWindows--
			// The oldest line the window scanned: older than asked.
			writeLog(w, []map[string]any{}, t.Add(-time.Nanosecond).Format(time.RFC3339Nano))
			return
		}
	}
	zone := f.Zone
	if zone == nil {
		zone = time.UTC
	}
	data := []map[string]any{}
	oldest := ""
	for _, e := range f.entries {
		if len(data) >= limit {
			break
		}
		if !older.IsZero() && !e.Time.Before(older) {
			continue
		}
		reason := e.Reason
		if reason == "" {
			reason = "NotFilteredNotFound"
		}
		m := map[string]any{
			"time": e.Time.In(zone).Format(time.RFC3339Nano), "client": e.Client, "client_proto": "",
			"client_info": map[string]any{"whois": map[string]any{}, "name": "", "disallowed_rule": "", "disallowed": false},
			"elapsedMs":   "0.654321", "question": map[string]any{"class": "IN", "name": e.Name, "type": e.Type},
			"reason": reason, "rules": []any{}, "status": "NOERROR", "cached": false, "answer_dnssec": false, "upstream": "",
		}
		if len(e.Answers) > 0 {
			var ans []map[string]any
			for _, a := range e.Answers {
				typ := "A"
				if len(a) > 0 && slices.Contains([]byte(a), ':') {
					typ = "AAAA"
				}
				ans = append(ans, map[string]any{"type": typ, "value": a, "ttl": 300})
			}
			ans = append(ans, map[string]any{"type": "CNAME", "value": "alias.example.", "ttl": 300})
			m["answer"] = ans
		}
		data = append(data, m)
		oldest = m["time"].(string)
	}
	writeLog(w, data, oldest)
}

func writeLog(w http.ResponseWriter, data []map[string]any, oldest string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "oldest": oldest})
}
