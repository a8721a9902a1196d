package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// envNtfyReceiver carries the ntfy-compatible receiver's settings (JSON,
// ntfyProcess) to TestLabNotifyNtfyProcess.
const envNtfyReceiver = "JOCASTA_LAB_NTFY_RECEIVER"

type ntfyProcess struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

// TestLabNotifyNtfyProcess is not a test: it is the ntfy-compatible
// receiver that TestLabNotify runs, as a process of its own in the
// receiver namespace, where the real ntfy server cannot be installed (the
// module proxy refuses heckel.io/ntfy, Debian 12 has no package). It
// serves until killed.
func TestLabNotifyNtfyProcess(t *testing.T) {
	raw := os.Getenv(envNtfyReceiver)
	if raw == "" {
		t.Skip("the ntfy-compatible receiver of TestLabNotify; runs only when that test starts it")
	}
	var p ntfyProcess
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newNtfyReceiver(p.Token), ReadHeaderTimeout: 5 * time.Second}
	srv.Serve(ln) // until SIGKILL
}

// ntfyReceiver answers ntfy's publish API (POST or PUT /<topic>, the
// message as the body, title, priority, tags and click link in headers or
// query parameters) and its poll API (GET /<topic>/json?poll=1, one JSON
// message per line), as ../shared/reference/notify.md §1 describes them
// from ntfy's source, with access for one token only (ntfy's
// auth-default-access deny-all): a wrong token is 401, none 403.
type ntfyReceiver struct {
	token string

	mu   sync.Mutex
	msgs map[string][]ntfyStored
	n    int
}

// ntfyStored is a message as ntfy stores and returns it; optional keys
// are omitted when empty.
type ntfyStored struct {
	ID       string   `json:"id"`
	Time     int64    `json:"time"`
	Event    string   `json:"event"`
	Topic    string   `json:"topic"`
	Title    string   `json:"title,omitempty"`
	Message  string   `json:"message"`
	Priority int      `json:"priority,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Click    string   `json:"click,omitempty"`
}

var ntfyTopicName = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

func newNtfyReceiver(token string) *ntfyReceiver {
	return &ntfyReceiver{token: token, msgs: map[string][]ntfyStored{}}
}

// ntfyError writes ntfy's error body: {"code","http","error"}.
func ntfyError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "http": status, "error": msg})
}

// param is the first of names set as a header, else as a lower-case
// query parameter.
func ntfyParam(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := r.Header.Get(n); v != "" {
			return v
		}
	}
	q := r.URL.Query()
	for _, n := range names {
		if v := q.Get(strings.ToLower(n)); v != "" {
			return v
		}
	}
	return ""
}

func ntfyPriority(s string) (int, bool) {
	switch strings.ToLower(s) {
	case "":
		return 0, true
	case "min":
		return 1, true
	case "low":
		return 2, true
	case "default":
		return 3, true
	case "high":
		return 4, true
	case "max", "urgent":
		return 5, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1 && n <= 5
}

func (n *ntfyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch auth := r.Header.Get("Authorization"); {
	case auth == "":
		ntfyError(w, http.StatusForbidden, 40301, "forbidden")
		return
	case auth != "Bearer "+n.token:
		ntfyError(w, http.StatusUnauthorized, 40101, "unauthorized")
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	switch {
	case (r.Method == http.MethodPost || r.Method == http.MethodPut) && ntfyTopicName.MatchString(path):
		n.publish(w, r, path)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/json") && ntfyTopicName.MatchString(strings.TrimSuffix(path, "/json")):
		if r.URL.Query().Get("poll") == "" {
			ntfyError(w, http.StatusBadRequest, 40000, "this receiver answers polls only (poll=1)")
			return
		}
		n.mu.Lock()
		msgs := append([]ntfyStored(nil), n.msgs[strings.TrimSuffix(path, "/json")]...)
		n.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		enc := json.NewEncoder(w)
		for _, m := range msgs {
			enc.Encode(m)
		}
	case ntfyTopicName.MatchString(strings.SplitN(path, "/", 2)[0]):
		ntfyError(w, http.StatusMethodNotAllowed, 40500, "method not allowed")
	default:
		ntfyError(w, http.StatusBadRequest, 40009, "invalid topic")
	}
}

func (n *ntfyReceiver) publish(w http.ResponseWriter, r *http.Request, topic string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4097))
	if err != nil {
		ntfyError(w, http.StatusBadRequest, 40000, err.Error())
		return
	}
	if len(body) > 4096 {
		ntfyError(w, http.StatusRequestEntityTooLarge, 41301, "message too large (this receiver keeps 4096 bytes)")
		return
	}
	prio, ok := ntfyPriority(ntfyParam(r, "X-Priority", "Priority", "prio", "p"))
	if !ok {
		ntfyError(w, http.StatusBadRequest, 40007, "invalid priority")
		return
	}
	m := ntfyStored{Time: time.Now().Unix(), Event: "message", Topic: topic, Message: string(body), Priority: prio,
		Title: ntfyParam(r, "X-Title", "Title", "t"), Click: ntfyParam(r, "X-Click", "Click")}
	if m.Message == "" {
		m.Message = "triggered"
	}
	for _, tag := range strings.Split(ntfyParam(r, "X-Tags", "Tags", "Tag", "ta"), ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			m.Tags = append(m.Tags, tag)
		}
	}
	n.mu.Lock()
	n.n++
	m.ID = fmt.Sprintf("lab%09d", n.n)
	n.msgs[topic] = append(n.msgs[topic], m)
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(m)
}

// The ntfy-compatible receiver answers as the reference notes say ntfy
// does: what it stores is what the poll returns.
func TestNtfyReceiver(t *testing.T) {
	n := newNtfyReceiver("tk_lab")
	do := func(method, target, auth string, hdr map[string]string, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://ntfy.lab"+target, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := &recorder{header: http.Header{}}
		n.ServeHTTP(w, req)
		return w.status, w.body.String()
	}
	cases := []struct {
		name, method, target, auth string
		hdr                        map[string]string
		body                       string
		status                     int
		contains                   string
	}{
		{"no token", "POST", "/jocasta", "", nil, "x", 403, `"code":40301`},
		{"wrong token", "POST", "/jocasta", "Bearer tk_no", nil, "x", 401, `"code":40101`},
		{"headers", "POST", "/jocasta", "Bearer tk_lab", map[string]string{"X-Title": "T", "X-Priority": "4", "X-Tags": "a, b", "X-Click": "http://c"}, "hello", 200,
			`"event":"message","topic":"jocasta","title":"T","message":"hello","priority":4,"tags":["a","b"],"click":"http://c"`},
		{"query parameters and names", "PUT", "/jocasta?t=Q&p=urgent&ta=z", "Bearer tk_lab", nil, "", 200, `"title":"Q","message":"triggered","priority":5,"tags":["z"]`},
		{"bad priority", "POST", "/jocasta", "Bearer tk_lab", map[string]string{"Priority": "9"}, "x", 400, `"code":40007`},
		{"bad topic", "POST", "/a%20b", "Bearer tk_lab", nil, "x", 400, `"code":40009`},
		{"too large", "POST", "/jocasta", "Bearer tk_lab", nil, strings.Repeat("x", 4097), 413, `"code":41301`},
		{"poll", "GET", "/jocasta/json?poll=1", "Bearer tk_lab", nil, "", 200, `"message":"hello"`},
		{"stream", "GET", "/jocasta/json", "Bearer tk_lab", nil, "", 400, `polls only`},
	}
	for _, c := range cases {
		status, body := do(c.method, c.target, c.auth, c.hdr, c.body)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %d %s; want %d with %s", c.name, status, body, c.status, c.contains)
		}
	}
	if _, body := do("GET", "/jocasta/json?poll=1", "Bearer tk_lab", nil, ""); strings.Count(body, "\n") != 2 {
		t.Errorf("poll after two messages:\n%s", body)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int)   { r.status = s }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.body.Write(b)
}
