package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookRecorder is a Standard Webhooks receiver for the notify tests: it
// verifies every delivery with the reference standardwebhooks library,
// answers as its mode says, and counts what it accepted by webhook-id.
// The lab test runs it in a process of its own inside a network
// namespace (lab_notify_test.go), the control-socket test on loopback.
type hookRecorder struct {
	wh *standardwebhooks.Webhook
	// mode is read at each request: hookOK (200), hook503, hook410,
	// hookHang (answers after hangFor), hookSlowBody (200 at once, then
	// the body a byte at a time over hangFor), hookSlow (200 after slowFor).
	mode func() string
	// journal, when set, gets one JSON line per request (hookLine).
	journal io.Writer

	mu       sync.Mutex
	accepted map[string]int    // by webhook-id: 2xx answers to verified deliveries
	kinds    map[string]string // webhook-id → type
	refused  int               // deliveries whose signature the library refused
}

const (
	hookOK       = "ok"
	hook503      = "503"
	hook410      = "410"
	hookHang     = "hang"
	hookSlowBody = "slowbody"
	hookSlow     = "slow" // 200 after slowFor
)

// slowFor is how long hookSlow takes to answer: deliveries are in flight
// when the lab test kills serve.
const slowFor = 300 * time.Millisecond

// hangFor is how long hookHang waits and hookSlowBody dribbles: longer
// than the destinations' timeout in the tests (1s).
const hangFor = 4 * time.Second

// hookLine is one request as the journal records it.
type hookLine struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Verified bool   `json:"verified"`
	Mode     string `json:"mode"`
	Status   int    `json:"status"`
}

func newHookRecorder(secret string, mode func() string) (*hookRecorder, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return &hookRecorder{wh: wh, mode: mode, accepted: map[string]int{}, kinds: map[string]string{}}, nil
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	line := hookLine{ID: r.Header.Get("webhook-id"), Mode: h.mode()}
	var b struct {
		Type string `json:"type"`
	}
	json.Unmarshal(body, &b)
	line.Type = b.Type
	if err := h.wh.Verify(body, r.Header); err != nil {
		line.Status = http.StatusUnauthorized
		h.mu.Lock()
		h.refused++
		h.mu.Unlock()
	} else {
		line.Verified = true
		switch line.Mode {
		case hook503:
			line.Status = http.StatusServiceUnavailable
		case hook410:
			line.Status = http.StatusGone
		default:
			line.Status = http.StatusOK
		}
	}
	h.write(line)
	switch {
	case line.Status != http.StatusOK:
		w.WriteHeader(line.Status)
		return
	case line.Mode == hookHang:
		select {
		case <-time.After(hangFor):
		case <-r.Context().Done():
			return
		}
	case line.Mode == hookSlow:
		select {
		case <-time.After(slowFor):
		case <-r.Context().Done():
			return
		}
	case line.Mode == hookSlowBody:
		w.Header().Set("Content-Length", strconv.Itoa(int(hangFor/(100*time.Millisecond))))
		w.WriteHeader(http.StatusOK)
		h.count(line)
		for range hangFor / (100 * time.Millisecond) {
			w.Write([]byte("."))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		return
	}
	h.count(line)
	w.WriteHeader(http.StatusOK)
}

func (h *hookRecorder) count(l hookLine) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.accepted[l.ID]++
	h.kinds[l.ID] = l.Type
}

func (h *hookRecorder) write(l hookLine) {
	if h.journal == nil {
		return
	}
	b, _ := json.Marshal(l)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.journal.Write(append(b, '\n'))
}

// got is how often each webhook-id was accepted.
func (h *hookRecorder) got() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.accepted))
	for k, v := range h.accepted {
		out[k] = v
	}
	return out
}
