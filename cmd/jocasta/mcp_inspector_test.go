package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// inspectorDir is where .ci/run installs the official MCP inspector
// (httpapi/mcp/inspector/package.json, pinned; `npm ci` there).
const inspectorDir = "../../httpapi/mcp/inspector"

// inspector runs the official MCP inspector's CLI against one serve,
// through a recording proxy.
type inspector struct {
	node, bin, url, home string
	base                 string // serve's own URL

	mu       sync.Mutex
	sessions map[string]bool // Mcp-Session-Id → ended with DELETE
}

// proxy passes the inspector's requests to serve and notes the MCP
// sessions they open and end. The inspector's CLI exits without ending
// its session (no DELETE): serve must close them itself as it stops
// (mcp.Endpoint.Close), which the package's goleak check proves.
func (x *inspector) proxy(t *testing.T) string {
	t.Helper()
	target, err := url.Parse(x.base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		id := resp.Header.Get("Mcp-Session-Id")
		if id == "" {
			id = resp.Request.Header.Get("Mcp-Session-Id")
		}
		if id == "" {
			return nil
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		if resp.Request.Method == http.MethodDelete {
			x.sessions[id] = true
		} else if _, ok := x.sessions[id]; !ok {
			x.sessions[id] = false
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// openSessions counts the sessions the inspector opened and never ended.
func (x *inspector) openSessions() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, ended := range x.sessions {
		if !ended {
			n++
		}
	}
	return n
}

// findInspector returns the installed inspector, pointed at serve's
// /mcp at base, or skips (fails in CI) saying how to install it.
func findInspector(t *testing.T, base string) *inspector {
	t.Helper()
	bin := filepath.Join(inspectorDir, "node_modules", ".bin", "mcp-inspector")
	node, nerr := exec.LookPath("node")
	_, berr := os.Stat(bin)
	if nerr != nil || berr != nil {
		msg := "the official MCP inspector is not installed: run `npm ci --ignore-scripts` in httpapi/mcp/inspector (needs node and npm)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED LOUDLY: " + msg)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	x := &inspector{node: node, bin: abs, base: base, home: t.TempDir(), sessions: map[string]bool{}}
	x.url = x.proxy(t) + "/mcp"
	return x
}

// run calls one method with token ("" for none) and returns the exit
// code, stdout and stderr.
func (x *inspector) run(t *testing.T, token string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := []string{x.bin, "--cli", x.url, "--transport", "http", "--format", "json", "--quiet",
		"--stored-auth-only", "--connect-timeout", "20000"}
	if token != "" {
		argv = append(argv, "--header", "Authorization: Bearer "+token)
	}
	cmd := exec.CommandContext(ctx, x.node, append(argv, args...)...)
	// Its catalog, OAuth store and client config go to a temp home.
	cmd.Env = append(os.Environ(), "HOME="+x.home, "XDG_CONFIG_HOME="+x.home, "XDG_DATA_HOME="+x.home,
		"XDG_STATE_HOME="+x.home, "NO_COLOR=1", "BROWSER=/bin/false")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("inspector %v: no answer within 90s\nstdout: %s\nstderr: %s", args, out.String(), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestMCPInspector runs the official MCP inspector's CLI (a client that
// is not ours) against serve with MCP on: it lists the tools, calls
// read tools with a read token, is refused a write tool with that token
// and allowed it with a read_write one, and gets 401 without a token.
func TestMCPInspector(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), noSweeps+"server:\n  mcp:\n    enabled: true\n")
	seed(t, cfg, sweepAt(time.Now().UTC().Add(-time.Minute), hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}))
	d := startDaemon(t, cfg)
	x := findInspector(t, d.base)
	token := func(name, mode string) string {
		t.Helper()
		code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", name, "--mode", mode, "--expires", "never")
		if code != 0 {
			t.Fatalf("token create: %s", stderr)
		}
		return lastLine(out)
	}
	read, write := token("inspector-read", "read"), token("inspector-write", "read_write")

	// The result of a tools/call as the inspector prints it.
	type callResult struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	call := func(tok string, args ...string) (int, callResult, string, string) {
		t.Helper()
		code, out, stderr := x.run(t, tok, append([]string{"--method", "tools/call"}, args...)...)
		var r struct {
			Result callResult `json:"result"`
		}
		// A tool's error result exits 5 and is printed like any result.
		if err := json.Unmarshal([]byte(out), &r); err != nil && code == 0 {
			t.Fatalf("tools/call %v: not a result: %v\n%s", args, err, clip(out))
		}
		return code, r.Result, out, stderr
	}

	// tools/list: a read token's session is not offered the write tools,
	// a read_write token's is.
	list := func(t *testing.T, tok string) map[string]bool {
		t.Helper()
		code, out, stderr := x.run(t, tok, "--method", "tools/list")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, clip(out), stderr)
		}
		var res struct {
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("tools/list: %v\n%s", err, clip(out))
		}
		got := map[string]bool{}
		for _, tl := range res.Result.Tools {
			got[tl.Name] = true
			if tl.Description == "" || len(tl.InputSchema) == 0 {
				t.Errorf("tool %s has no description or input schema", tl.Name)
			}
		}
		for _, want := range []string{"search_devices", "get_device", "change_log", "list_scans", "inventory_stats"} {
			if !got[want] {
				t.Errorf("tools/list lacks %s: %s", want, clip(out))
			}
		}
		return got
	}
	t.Run("tools/list", func(t *testing.T) {
		ro, rw := list(t, read), list(t, write)
		for _, w := range []string{"edit_device", "watch_device"} {
			if ro[w] {
				t.Errorf("tools/list offers %s to a read token", w)
			}
			if !rw[w] {
				t.Errorf("tools/list does not offer %s to a read_write token", w)
			}
		}
	})

	var id string
	t.Run("read tools", func(t *testing.T) {
		code, r, out, stderr := call(read, "--tool-name", "search_devices", "--tool-arg", "q=alpha")
		if code != 0 || r.IsError {
			t.Fatalf("search_devices: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
		}
		var found struct {
			Devices []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"devices"`
		}
		if err := json.Unmarshal(r.StructuredContent, &found); err != nil || len(found.Devices) != 1 || found.Devices[0].Name != "alpha.lab" {
			t.Fatalf("search_devices q=alpha: %v %s", err, out)
		}
		id = found.Devices[0].ID
		code, r, out, stderr = call(read, "--tool-name", "get_device", "--tool-arg", "id="+id)
		if code != 0 || r.IsError {
			t.Fatalf("get_device: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
		}
		var dev projections.Device
		if err := json.Unmarshal(r.StructuredContent, &dev); err != nil || dev.ID != id || dev.MAC == nil || *dev.MAC != "00:1b:63:00:00:01" {
			t.Fatalf("get_device: %v %s", err, out)
		}
	})
	if id == "" {
		t.Fatal("no device id to edit")
	}

	t.Run("write tool refused with a read token", func(t *testing.T) {
		code, r, out, stderr := call(read, "--tool-name", "edit_device", "--tool-arg", "id="+id, "label=from-inspector")
		t.Logf("refused (exit %d): %s %s", code, clip(out), clip(stderr))
		// The tool is not listed to a read token, so the inspector refuses
		// it itself (tool_not_found); a client that calls it anyway gets
		// the server's tool error saying which token it needs (TestTools
		// in httpapi/mcp).
		switch {
		case code == 0:
			t.Fatalf("edit_device with a read token: exit 0: %s", clip(out))
		case strings.Contains(out+stderr, "tool_not_found"):
		case !r.IsError || len(r.Content) == 0:
			t.Fatalf("edit_device with a read token: exit %d, neither not found nor a tool error: %s", code, clip(out))
		case !strings.Contains(r.Content[0].Text, "read_write"):
			t.Errorf("the refusal does not say a read_write token is needed: %q", r.Content[0].Text)
		}
		_, body := d.do(t, "GET", "/api/devices/"+id, read, "", "")
		if strings.Contains(string(body), "from-inspector") {
			t.Fatalf("the refused edit changed the device: %s", body)
		}
	})

	t.Run("write tool with a read_write token", func(t *testing.T) {
		code, r, out, stderr := call(write, "--tool-name", "edit_device", "--tool-arg", "id="+id, "label=from-inspector")
		if code != 0 || r.IsError {
			t.Fatalf("edit_device: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
		}
		_, body := d.do(t, "GET", "/api/events?device="+id+"&kind="+projections.ChangeEdited, read, "", "")
		var p projections.Page[projections.ChangeEntry]
		if err := json.Unmarshal(body, &p); err != nil || len(p.Items) == 0 || !strings.Contains(p.Items[0].Actor, "inspector-write") {
			t.Fatalf("the edit's change-log entry does not name the token: %v %s", err, body)
		}
	})

	t.Run("401 without a token", func(t *testing.T) {
		code, out, stderr := x.run(t, "", "--method", "tools/list")
		if code == 0 {
			t.Fatalf("tools/list without a token succeeded: %s", out)
		}
		t.Logf("without a token (exit %d): %s %s", code, clip(out), clip(stderr))
		if !strings.Contains(stderr, "auth_required") || !strings.Contains(stderr, `\"status\":401`) {
			t.Errorf("the failure does not say the server wants authentication:\nstdout: %s\nstderr: %s", out, stderr)
		}
		if strings.Contains(out+stderr, read) || strings.Contains(out+stderr, write) {
			t.Error("a token secret shows in the inspector's output")
		}
	})

	// The inspector left its sessions open; serve closes them as it
	// stops, within its budget, leaving no goroutine behind (goleak in
	// TestMain).
	if x.openSessions() == 0 {
		t.Error("the inspector ended its sessions: nothing shows that serve closes open ones as it stops")
	}
	if err := d.stop(); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
}

// clip shortens what the inspector printed for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
