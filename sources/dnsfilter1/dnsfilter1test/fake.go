// Package dnsfilter1test is a fake Pi-hole v6 API (pihole-FTL's /api/auth
// and /api/queries), built from the reference notes
// (../shared/reference/dnsfilter1.md), with the recorded edge cases: a
// limited number of session seats (429, or 401 on the builds that answer
// so, with key api_seats_exceeded), the privacy level that hides every
// query (cursor null), a cursor past the largest id (400), ids that start
// again, and faults.
package dnsfilter1test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Query is one query-log entry.
type Query struct {
	ID     uint64
	Time   time.Time
	Type   string
	Domain string
	Status string // "" writes null
	Client string
}

// Fake is the server; use it as an http.Handler (httptest.NewServer).
type Fake struct {
	// Password is the app password; "" is a server with no password set.
	Password string
	// MaxSessions is webserver.api.max_sessions (default 16).
	MaxSessions int
	// SeatsStatus is the HTTP status of a login with every seat taken:
	// 429 (default) or 401.
	SeatsStatus int
	// Private hides every query (privacy level maximum).
	Private bool
	// Delay is how long a faulted "slow" call waits (or until the request
	// ends).
	Delay time.Duration

	mu       sync.Mutex
	queries  []Query // by id ascending
	sessions map[string]bool
	nextSID  int
	faults   map[string]string
	// Logins and Logouts count the sessions opened and closed.
	Logins, Logouts int
	// Requests counts /api/queries calls.
	Requests int
}

// Add appends queries; a zero ID takes the next one.
func (f *Fake) Add(qs ...Query) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range qs {
		if q.ID == 0 {
			q.ID = f.maxID() + 1
		}
		f.queries = append(f.queries, q)
	}
	slices.SortFunc(f.queries, func(a, b Query) int { return int(a.ID) - int(b.ID) })
}

// Reset drops every query (a replaced database: ids start again at 1).
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = nil
}

// Fault makes calls to path ("auth", "queries") fail: "500", "401",
// "slow", "garbage"; "" clears it.
func (f *Fake) Fault(path, kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults == nil {
		f.faults = map[string]string{}
	}
	f.faults[path] = kind
}

// Sessions is the number of open sessions.
func (f *Fake) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

func (f *Fake) maxID() uint64 {
	if len(f.queries) == 0 {
		return 0
	}
	return f.queries[len(f.queries)-1].ID
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, status int, key, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"key": key, "message": msg, "hint": nil}, "took": 0.001})
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var path string
	switch r.URL.Path {
	case "/api/auth":
		path = "auth"
	case "/api/queries":
		path = "queries"
	default:
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	fault := f.faults[path]
	delay := f.Delay
	f.mu.Unlock()
	switch fault {
	case "500":
		apiErr(w, http.StatusInternalServerError, "internal", "database busy")
		return
	case "401":
		apiErr(w, http.StatusUnauthorized, "unauthorized", "Unauthorized")
		return
	case "slow":
		// The body read first: the server notices a client that went
		// away only once it has read the request's body.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(delay):
		}
		return
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"queries":[{"id":"x`))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if path == "auth" {
		f.auth(w, r)
		return
	}
	if r.Method != http.MethodGet {
		apiErr(w, http.StatusMethodNotAllowed, "bad_request", "method")
		return
	}
	if f.Password != "" && !f.sessions[r.Header.Get("X-FTL-SID")] {
		apiErr(w, http.StatusUnauthorized, "unauthorized", "Unauthorized")
		return
	}
	f.Requests++
	f.serveQueries(w, r)
}

func (f *Fake) auth(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		var body struct {
			Password *string `json:"password"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Password == nil {
			apiErr(w, http.StatusBadRequest, "bad_request", "No password found in JSON payload")
			return
		}
		if f.Password == "" {
			writeJSON(w, http.StatusOK, map[string]any{"session": map[string]any{"valid": true, "totp": false, "sid": nil, "validity": -1, "message": "no password set"}, "took": 0.001})
			return
		}
		if *body.Password != f.Password {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"session": map[string]any{"valid": false, "totp": false, "sid": nil, "validity": -1, "message": "password incorrect"}, "took": 0.001})
			return
		}
		max := f.MaxSessions
		if max == 0 {
			max = 16
		}
		if len(f.sessions) >= max {
			st := f.SeatsStatus
			if st == 0 {
				st = http.StatusTooManyRequests
			}
			writeJSON(w, st, map[string]any{"error": map[string]any{"key": "api_seats_exceeded", "message": "API seats exceeded", "hint": "increase webserver.api.max_sessions"}, "took": 0.001})
			return
		}
		if f.sessions == nil {
			f.sessions = map[string]bool{}
		}
		f.nextSID++
		sid := fmt.Sprintf("q0Zk3b+Yp1Lx/%d=", f.nextSID)
		f.sessions[sid] = true
		f.Logins++
		writeJSON(w, http.StatusOK, map[string]any{"session": map[string]any{"valid": true, "totp": false, "sid": sid, "csrf": "2mVf7+Hn0aQ=", "validity": 1800, "message": "app-password correct"}, "took": 0.04})
	case http.MethodDelete:
		sid := r.Header.Get("X-FTL-SID")
		if !f.sessions[sid] {
			apiErr(w, http.StatusUnauthorized, "unauthorized", "Unauthorized")
			return
		}
		delete(f.sessions, sid)
		f.Logouts++
		w.WriteHeader(http.StatusNoContent)
	default:
		apiErr(w, http.StatusMethodNotAllowed, "bad_request", "method")
	}
}

func (f *Fake) serveQueries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	num := func(k string, def float64) (float64, bool) {
		s := q.Get(k)
		if s == "" {
			return def, true
		}
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	from, ok1 := num("from", 0)
	until, ok2 := num("until", 0)
	length, ok3 := num("length", 100)
	start, ok4 := num("start", 0)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		apiErr(w, http.StatusBadRequest, "bad_request", "Invalid parameter")
		return
	}
	if f.Private {
		writeJSON(w, http.StatusOK, map[string]any{"queries": []any{}, "cursor": nil, "took": 0.001})
		return
	}
	cursor := f.maxID()
	if s := q.Get("cursor"); s != "" {
		c, err := strconv.ParseUint(s, 10, 64)
		if err != nil || c > f.maxID() {
			apiErr(w, http.StatusBadRequest, "bad_request", "Requested cursor is invalid")
			return
		}
		cursor = c
	}
	var match []Query
	for k := len(f.queries) - 1; k >= 0; k-- { // newest first
		e := f.queries[k]
		ts := float64(e.Time.UnixMicro()) / 1e6
		if e.ID > cursor || ts < from || (until > 0 && ts >= until) {
			continue
		}
		match = append(match, e)
	}
	lo := min(int(start), len(match))
	hi := min(lo+int(length), len(match))
	out := make([]map[string]any, 0, hi-lo)
	for _, e := range match[lo:hi] {
		var status any
		if e.Status != "" {
			status = e.Status
		}
		out = append(out, map[string]any{
			"id": e.ID, "time": float64(e.Time.UnixMicro()) / 1e6, "type": e.Type, "domain": e.Domain, "cname": nil,
			"status": status, "client": map[string]any{"ip": e.Client, "name": nil}, "dnssec": "UNKNOWN",
			"reply": map[string]any{"type": "IP", "time": 1.5}, "list_id": nil, "upstream": nil,
			"ede": map[string]any{"code": 0, "text": nil},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"queries": out, "cursor": cursor, "recordsTotal": len(f.queries),
		"recordsFiltered": len(match), "draw": 0, "took": 0.002})
}
