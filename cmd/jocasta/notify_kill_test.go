package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// hookReceiver is a Standard Webhooks receiver that checks every
// signature itself (HMAC per the spec, not package webhook) and counts
// deliveries by webhook-id.
type hookReceiver struct {
	*httptest.Server
	t    *testing.T
	key  []byte
	mu   sync.Mutex
	ids  map[string]int
	kind map[string]string
	hold time.Duration
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{t: t, key: key, ids: map[string]int{}, kind: map[string]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
		mac := hmac.New(sha256.New, r.key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); req.Header.Get("webhook-signature") != want {
			t.Errorf("delivery %s: bad signature", id)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b struct {
			Type string `json:"type"`
		}
		json.Unmarshal(body, &b)
		r.mu.Lock()
		hold := r.hold
		r.mu.Unlock()
		if hold > 0 {
			time.Sleep(hold)
		}
		r.mu.Lock()
		r.ids[id]++
		r.kind[id] = b.Type
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// startBinary runs `jocasta serve` and returns once it serves the API.
func startBinary(t *testing.T, bin, cfg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var logs strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "serving the API") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("serve did not start:\n%s", logs.String())
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func apiDo(t *testing.T, method, url, tok, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestNotifySurvivesSIGKILL kills serve while webhooks are in flight and
// starts it again: every selected change arrives, duplicates only by id,
// and the changes from before the first start are never sent.
func TestNotifySurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rcv := newHookReceiver(t, secret)
	rcv.hold = 150 * time.Millisecond
	bin := buildBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	cfg := writeConfig(t, dir, noSweeps+"server:\n  port: "+strconv.Itoa(port)+"\n"+
		"notify:\n  hook:\n    webhook:\n      url: "+rcv.URL+"/in\n      secret: "+secret+"\n")
	now := time.Now().UTC().Truncate(time.Second)
	seed(t, cfg, sweepAt(now.Add(-time.Minute),
		hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}, hostSpec{"10.9.0.11", "00:1b:63:00:00:02", "beta.lab"}))
	code, out, _ := cli(t, "", "token", "create", "--config", cfg, "--name", "ops", "--mode", "read_write", "--expires", "never", "--json")
	if code != 0 {
		t.Fatal("token create failed")
	}
	var created struct{ Secret string }
	json.Unmarshal([]byte(out), &created)
	tok := created.Secret
	base := "http://127.0.0.1:" + strconv.Itoa(port)

	srv := startBinary(t, bin, cfg)
	waitReady(t, base)
	code, body := apiDo(t, "PUT", base+"/api/notifications/hook", tok,
		`{"rules": [{"kinds": ["device.discovered", "device.edited"], "scope": "all"}]}`)
	if code != 200 {
		t.Fatalf("PUT rules: %d %s", code, body)
	}
	_, body = apiDo(t, "GET", base+"/api/devices", tok, "")
	var devs projections.Page[projections.Device]
	if err := json.Unmarshal(body, &devs); err != nil || len(devs.Items) != 2 {
		t.Fatalf("devices: %s", body)
	}
	const edits = 20
	for i := range edits {
		id := devs.Items[i%2].ID
		if code, body := apiDo(t, "PATCH", base+"/api/devices/"+id, tok, fmt.Sprintf(`{"label": "l%d"}`, i)); code != 200 {
			t.Fatalf("edit %d: %d %s", i, code, body)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for rcv.distinct() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	sent := rcv.distinct()
	if sent >= edits {
		t.Fatalf("all %d delivered before the kill: the test proves nothing", sent)
	}
	rcv.mu.Lock()
	rcv.hold = 0
	rcv.mu.Unlock()

	startBinary(t, bin, cfg)
	waitReady(t, base)
	deadline = time.Now().Add(30 * time.Second)
	for rcv.distinct() < edits && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_, body = apiDo(t, "GET", base+"/api/events?kind=device.edited&limit=100", tok, "")
	var changes projections.Page[projections.ChangeEntry]
	json.Unmarshal(body, &changes)
	if len(changes.Items) != edits {
		t.Fatalf("%d device.edited entries, want %d", len(changes.Items), edits)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, c := range changes.Items {
		if rcv.ids[c.ID] == 0 {
			t.Errorf("change %s was never delivered", c.ID)
		}
	}
	dups := 0
	for id, n := range rcv.ids {
		if rcv.kind[id] != "device.edited" {
			t.Errorf("delivered %s of kind %s: the changes from before the first start must not be sent", id, rcv.kind[id])
		}
		dups += n - 1
	}
	t.Logf("%d delivered before SIGKILL, %d duplicates after the restart (same webhook-id)", sent, dups)
	if len(rcv.ids) != edits {
		t.Errorf("%d distinct deliveries, want %d", len(rcv.ids), edits)
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/api/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("serve not ready after 30s")
}
