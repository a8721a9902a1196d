package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/jocasta/jocasta"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// rel turns an import path of this module into its path inside it.
func rel(p string) (string, bool) {
	if p == module {
		return "", true
	}
	if strings.HasPrefix(p, module+"/") {
		return strings.TrimPrefix(p, module+"/"), true
	}
	return "", false
}

func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// rule says what one package (by its path in the module) may import from
// the module. allowed returns "" when fine, else why not.
func check(from, to string) string {
	switch {
	case under(to, "cmd"):
		if !under(from, "cmd") {
			return "nothing outside cmd imports cmd"
		}
	}
	switch {
	case from == "events":
		return "events imports only the standard library"
	case from == "events/bus":
		if to != "events" {
			return "events/bus imports only events"
		}
	case from == "events/remote":
		// The sensors' transport: it builds events with ingest, appends
		// with the store, and logs watermill through the bus's adapter.
		if to != "events" && to != "events/ingest" && to != "events/bus" && to != "sources" && !under(to, "store") {
			return "events/remote imports events, events/ingest, events/bus, sources and store only"
		}
	case under(from, "events/ingest"):
		if to != "events" && to != "sources" && !under(to, "store") && to != "projections" {
			return "ingest imports events, store and the sources types only"
		}
	case under(from, "events/command"):
		// The write side reads the read models' types and the access
		// model's credential helpers (hashing, token secrets).
		if to != "events" && !under(to, "store") && !under(to, "projections") {
			return "command imports events, store and projections only"
		}
	case under(from, "store"):
		if to != "events" && !under(to, "store") {
			return "store imports only events"
		}
	case from == "sources":
		return "sources imports only the standard library"
	case from == "sources/scheduler":
		if to != "sources" {
			return "the scheduler knows only the sources contract, never a kind"
		}
	case from == "sources/sourcetest":
		if to != "sources" && to != "sources/scheduler" {
			return "the conformance suite imports only the contract and the scheduler"
		}
	case under(from, "sources"):
		if !under(to, "sources") {
			return "a source imports only sources packages: it never sees events, the store or HTTP"
		}
	case under(from, "projections"):
		if to != "events" && !under(to, "store") && !under(to, "projections") {
			return "projections import events, store and projections only"
		}
	case under(from, "httpapi"):
		if to != "events" && !under(to, "projections") && !under(to, "httpapi") && to != "events/command" {
			return "httpapi imports events, projections and the write side's command types only"
		}
		if under(to, "projections/runner") {
			return "httpapi uses projections for types, not the runner"
		}
	case under(from, "ui"):
		if to != "events" && !under(to, "projections") && !under(to, "ui") && to != "events/command" {
			return "ui imports events, projections (types) and the write side's command types only"
		}
	}
	return ""
}

// watermillAllowed says which packages may import watermill: the
// in-process doorbell (events/bus) and the one multi-machine transport,
// the sensors' NATS JetStream link (events/remote), so that the choice of
// transport stays in two places.
func watermillAllowed(from string) bool { return from == "events/bus" || from == "events/remote" }

func TestImportRules(t *testing.T) {
	for _, p := range listPackages(t) {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/ThreeDotsLabs/watermill") && !watermillAllowed(from) {
				t.Errorf("%s imports %s: only events/bus (the in-process doorbell) and events/remote (the sensors' NATS JetStream transport) may import watermill", from, imp)
			}
			if strings.HasPrefix(imp, "github.com/modelcontextprotocol/") && from != "httpapi/mcp" {
				t.Errorf("%s imports %s: only httpapi/mcp may import the MCP SDK", from, imp)
			}
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if why := check(from, to); why != "" {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if strings.HasPrefix(imp, "github.com/ThreeDotsLabs/watermill") && !watermillAllowed(from) {
				t.Errorf("%s (tests) imports %s: only events/bus and events/remote may import watermill", from, imp)
			}
		}
	}
}

func TestRulesCatchViolations(t *testing.T) {
	tests := []struct{ from, to string }{
		{"events", "store"},
		{"store", "projections"},
		{"sources", "events"},
		{"sources/icmpsweep", "store"},
		{"projections/inventory", "sources"},
		{"httpapi", "store"},
		{"httpapi", "projections/runner"},
		{"ui", "httpapi"},
		{"projections", "cmd/internal/config"},
		{"sources/scheduler", "sources/devicesweep"},
		{"sources/sourcetest", "sources/portscan"},
	}
	for _, tc := range tests {
		if check(tc.from, tc.to) == "" {
			t.Errorf("%s → %s allowed, want refused", tc.from, tc.to)
		}
	}
	for _, ok := range [][2]string{{"projections/inventory", "store"}, {"httpapi", "projections"}, {"events/bus", "events"}, {"cmd/jocasta", "store"}, {"sources/resolve/mdns", "sources"}} {
		if why := check(ok[0], ok[1]); why != "" {
			t.Errorf("%s → %s refused: %s", ok[0], ok[1], why)
		}
	}
}
