// Package routerapitest is a fake RouterOS v7 REST API, built from
// ../shared/reference/routerapi.md, for tests of the routerapi source and
// of the service: tables served as RouterOS serves them (every value a
// string, no paging, HTTP Basic on every request, only the columns a
// .proplist asks for (and .id), the error shape
// {"error":N,"message":...,"detail":...}), menus of packages that are not
// installed answering 400 "no such command or directory", and faults to
// inject.
package routerapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Row is one table row: RouterOS names and string values.
type Row map[string]string

// Fake is the fake router. Set its fields before serving, or under Lock.
type Fake struct {
	mu sync.Mutex
	// User and Password are the credentials it accepts.
	User, Password string
	// Identity and Board are system/identity name and system/resource
	// board-name.
	Identity, Board string
	// Tables maps a menu ("ip/arp") to its rows. A menu that is not here
	// is a package not installed (400 no such command). The routes and
	// addresses the outside address is read from are the tables
	// "ip/route" (dst-address, gateway, immediate-gw, routing-table,
	// active, disabled) and "ip/address" (address, interface, disabled,
	// invalid).
	Tables map[string][]Row
	// Faults maps a menu to a fault: "401", "403" (refused, as by a
	// proxy in front), "500-policy" (group lacks the api policy), "html"
	// (an HTML error page with 200), "truncated" (JSON cut short),
	// "numbers" (values as JSON numbers and booleans where they look like
	// them), "object" (an object where a list belongs), "slow" (answers
	// after Delay), "garbage" (not JSON at all).
	Faults map[string]string
	Delay  time.Duration
	// Requests counts requests by method and path.
	Requests map[string]int
}

// New returns a fake router with the credentials user and password and
// no tables.
func New(user, password string) *Fake {
	return &Fake{User: user, Password: password, Identity: "core", Board: "CCR2004", Tables: map[string][]Row{}, Faults: map[string]string{}, Requests: map[string]int{}}
}

// Set replaces the rows of a menu.
func (f *Fake) Set(menu string, rows []Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Tables[menu] = rows
}

// Fault sets (or with "" clears) the fault of a menu.
func (f *Fake) Fault(menu, fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault == "" {
		delete(f.Faults, menu)
		return
	}
	f.Faults[menu] = fault
}

// Count returns how many requests of method and path the fake served.
func (f *Fake) Count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Requests[method+" "+path]
}

// Writes counts requests that are not GET: a reader must make none.
func (f *Fake) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, v := range f.Requests {
		if !strings.HasPrefix(k, "GET ") {
			n += v
		}
	}
	return n
}

func writeError(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"error": status, "message": http.StatusText(status)}
	if detail != "" {
		body["detail"] = detail
	}
	json.NewEncoder(w).Encode(body)
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.Requests[r.Method+" "+r.URL.Path]++
	user, pass, ok := r.BasicAuth()
	menu := strings.TrimPrefix(r.URL.Path, "/rest/")
	fault := f.Faults[menu]
	delay := f.Delay
	var rows []Row
	var known bool
	var single Row
	switch menu {
	case "system/identity":
		single, known = Row{"name": f.Identity}, true
	case "system/resource":
		single, known = Row{"board-name": f.Board, "version": "7.16.2 (stable)", "uptime": "3d7h1m", "cpu-load": "4"}, true
	default:
		rows, known = f.Tables[menu]
		rows = append([]Row(nil), rows...)
	}
	f.mu.Unlock()
	if pl := r.URL.Query().Get(".proplist"); pl != "" {
		keys := append(strings.Split(pl, ","), ".id")
		for i, row := range rows {
			rows[i] = project(row, keys)
		}
		if single != nil {
			single = project(single, keys)
		}
	}

	if !strings.HasPrefix(r.URL.Path, "/rest/") {
		http.NotFound(w, r)
		return
	}
	if !ok || user != f.User || pass != f.Password || fault == "401" {
		writeError(w, http.StatusUnauthorized, "")
		return
	}
	if r.Method != http.MethodGet {
		writeError(w, http.StatusNotAcceptable, "no such command or directory (remove)")
		return
	}
	switch fault {
	case "slow":
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	case "403":
		writeError(w, http.StatusForbidden, "")
		return
	case "500-policy":
		writeError(w, http.StatusInternalServerError, "std failure: not allowed (9)")
		return
	case "html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><h1>Error</h1></body></html>")
		return
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "\x00\x01 this is not json")
		return
	}
	if !known {
		writeError(w, http.StatusBadRequest, "no such command or directory ("+menu[strings.LastIndexByte(menu, '/')+1:]+")")
		return
	}
	var out []byte
	switch {
	case single != nil:
		out, _ = json.Marshal(single)
	case fault == "object":
		out = []byte(`{"mac-address":"00:00:5E:00:53:01"}`)
	case fault == "numbers":
		var b strings.Builder
		b.WriteByte('[')
		for i, row := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			j := 0
			for k, v := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				j++
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				if v == "true" || v == "false" || isNumber(v) {
					b.WriteString(v)
				} else {
					vb, _ := json.Marshal(v)
					b.Write(vb)
				}
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
		out = []byte(b.String())
	default:
		if rows == nil {
			rows = []Row{}
		}
		for i, row := range rows {
			if _, ok := row[".id"]; !ok {
				row = clone(row)
				row[".id"] = fmt.Sprintf("*%X", i+1)
				rows[i] = row
			}
		}
		out, _ = json.Marshal(rows)
	}
	if fault == "truncated" && len(out) > 2 {
		out = out[:len(out)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// project returns the columns keys of r.
func project(r Row, keys []string) Row {
	p := make(Row, len(keys))
	for _, k := range keys {
		if v, ok := r[k]; ok {
			p[k] = v
		}
	}
	return p
}

func clone(r Row) Row {
	c := make(Row, len(r)+1)
	for k, v := range r {
		c[k] = v
	}
	return c
}

func isNumber(s string) bool {
	if s == "" || len(s) > 15 {
		return false
	}
	for i, c := range s {
		if c == '-' && i == 0 {
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != "-"
}
