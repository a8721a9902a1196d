// Package rpcroutertest is a fake OpenWrt ubus-over-HTTP endpoint (uhttpd
// with uhttpd-mod-ubus and rpcd), built from
// ../shared/reference/rpcrouter.md, for tests of the rpcrouter source and
// of the service: JSON-RPC 2.0 "call" on POST /ubus, rpcd sessions with
// login, expiry answered as -32002 Access denied, an ACL of calls and
// files, result arrays of [status] or [status, data], and faults to
// inject.
package rpcroutertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fake is the fake device. Set its fields before serving, or under its
// methods.
type Fake struct {
	mu sync.Mutex
	// User and Password are the rpcd login it accepts.
	User, Password string
	// ACL lists the "object.method" calls the login may make; nil allows
	// every call. Files lists the paths file.read may read.
	ACL   map[string]bool
	Files map[string]string
	// Replies maps "object.method" (with ":<device>" for iwinfo calls
	// that take one) to the data object of its result; a call with no
	// reply is "Object not found" (-32000). SetInterfaces sets the reply
	// of network.interface dump.
	Replies map[string]any
	// Faults maps "object.method" to a fault: "html" (an HTML page),
	// "truncated", "status6" (permission denied), "nodata" (result [0]),
	// "slow" (answers after Delay), "http500".
	Faults map[string]string
	Delay  time.Duration

	sessions map[string]bool
	// Logins counts successful logins; Calls counts calls by name.
	Logins int
	Calls  map[string]int
}

// New returns a fake device with the login user/password and no data.
func New(user, password string) *Fake {
	return &Fake{User: user, Password: password, Files: map[string]string{}, Replies: map[string]any{},
		Faults: map[string]string{}, sessions: map[string]bool{}, Calls: map[string]int{}}
}

// Reply sets the data of a call.
func (f *Fake) Reply(call string, data any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Replies[call] = data
}

// Fault sets (or with "" clears) the fault of a call.
func (f *Fake) Fault(call, fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault == "" {
		delete(f.Faults, call)
		return
	}
	f.Faults[call] = fault
}

// Interface is one logical interface of a network.interface dump.
type Interface struct {
	Name string
	Up   bool
	// Metric is its route metric.
	Metric int
	// Addresses are its IPv4 addresses, "203.0.113.7/24".
	Addresses []string
	// Routes are its routes, "0.0.0.0/0 via 203.0.113.1" ("::/0 via
	// fe80::1" for IPv6).
	Routes []string
}

// SetInterfaces sets the reply of network.interface dump, in the shape
// netifd gives it ([U]: not in the reference notes; see
// ../outside.go): {"interface":[{"interface":name,"up":..,"metric":..,
// "ipv4-address":[{"address":..,"mask":..}],"route":[{"target":..,
// "mask":..,"nexthop":..}]}]}. A call with no reply set answers "Object
// not found"; refuse it with the ACL or a fault like any other call.
func (f *Fake) SetInterfaces(ifaces ...Interface) {
	list := make([]any, 0, len(ifaces))
	for _, ifc := range ifaces {
		addrs, routes := []any{}, []any{}
		for _, a := range ifc.Addresses {
			addr, mask := splitPrefix(a)
			addrs = append(addrs, map[string]any{"address": addr, "mask": mask})
		}
		for _, r := range ifc.Routes {
			dst, via, _ := strings.Cut(r, " via ")
			target, mask := splitPrefix(dst)
			routes = append(routes, map[string]any{"target": target, "mask": mask, "nexthop": via, "enabled": true})
		}
		m := map[string]any{"interface": ifc.Name, "up": ifc.Up, "pending": false, "available": true, "proto": "static", "data": map[string]any{}}
		if ifc.Up {
			m["metric"] = ifc.Metric
			m["ipv4-address"] = addrs
			m["ipv6-address"] = []any{}
			m["route"] = routes
		}
		list = append(list, m)
	}
	f.Reply("network.interface.dump", map[string]any{"interface": list})
}

func splitPrefix(s string) (string, int) {
	addr, bits, _ := strings.Cut(s, "/")
	n, _ := strconv.Atoi(bits)
	return addr, n
}

// ExpireSessions ends every session, as rpcd does after 300 s idle.
func (f *Fake) ExpireSessions() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.sessions)
}

// Count returns how many times a call was made.
func (f *Fake) Count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Calls[call]
}

// LoginCount returns how many logins succeeded.
func (f *Fake) LoginCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Logins
}

type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

func reply(w http.ResponseWriter, id json.RawMessage, result []any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func replyError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ubus" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 65536)).Decode(&req); err != nil || req.JSONRPC != "2.0" || len(req.Params) != 4 {
		replyError(w, req.ID, -32700, "Parse error")
		return
	}
	if req.Method != "call" {
		replyError(w, req.ID, -32601, "Method not found")
		return
	}
	var sid, object, method string
	json.Unmarshal(req.Params[0], &sid)
	json.Unmarshal(req.Params[1], &object)
	json.Unmarshal(req.Params[2], &method)
	var args map[string]any
	if err := json.Unmarshal(req.Params[3], &args); err != nil {
		replyError(w, req.ID, -32602, "Invalid parameters")
		return
	}
	if _, ok := args["ubus_rpc_session"]; ok {
		replyError(w, req.ID, -32602, "Invalid parameters")
		return
	}
	call := object + "." + method

	f.mu.Lock()
	f.Calls[call]++
	if call == "session.login" {
		ok := args["username"] == f.User && args["password"] == f.Password
		var sidOut string
		if ok {
			b := make([]byte, 16)
			rand.Read(b)
			sidOut = hex.EncodeToString(b)
			f.sessions[sidOut] = true
			f.Logins++
		}
		f.mu.Unlock()
		if _, has := args["username"]; !has {
			reply(w, req.ID, []any{2})
			return
		}
		if !ok {
			reply(w, req.ID, []any{6})
			return
		}
		reply(w, req.ID, []any{0, map[string]any{"ubus_rpc_session": sidOut, "timeout": 300, "expires": 300,
			"acls": map[string]any{}, "data": map[string]any{"username": f.User}}})
		return
	}
	valid := f.sessions[sid]
	allowed := f.ACL == nil || f.ACL[call]
	key := call
	if dev, ok := args["device"].(string); ok {
		key += ":" + dev
	}
	data, known := f.Replies[key]
	if call == "file.read" {
		path, _ := args["path"].(string)
		text, ok := f.Files[path]
		known = true
		if !ok {
			data = nil
		} else {
			data = map[string]any{"data": text}
		}
	}
	fault := f.Faults[call]
	delay := f.Delay
	f.mu.Unlock()

	if !known {
		// uhttpd answers a missing object before any access check.
		replyError(w, req.ID, -32000, "Object not found")
		return
	}
	if !valid || !allowed {
		replyError(w, req.ID, -32002, "Access denied")
		return
	}
	switch fault {
	case "slow":
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	case "html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Bad Gateway</body></html>")
		return
	case "http500":
		http.Error(w, "oops", http.StatusInternalServerError)
		return
	case "status6":
		reply(w, req.ID, []any{6})
		return
	case "nodata":
		reply(w, req.ID, []any{0})
		return
	case "truncated":
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": []any{0, data}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b[:len(b)/2])
		return
	}
	if call == "file.read" && data == nil {
		reply(w, req.ID, []any{6}) // a path outside the ACL's file scope
		return
	}
	if s, ok := data.(string); ok && strings.HasPrefix(s, "raw:") {
		// A reply spelled out by the test (a wrong type, an odd shape).
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":[0,%s]}`, req.ID, strings.TrimPrefix(s, "raw:"))
		return
	}
	reply(w, req.ID, []any{0, data})
}
