package config

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite config.example.yaml from Starter")

// exampleFile is config.example.yaml at the repository root.
var exampleFile = filepath.Join("..", "..", "..", "config.example.yaml")

func TestKeyDocsMatchSchema(t *testing.T) {
	docs := keyDocs()
	var missing []string
	for _, p := range patterns() {
		if _, ok := docs[p]; !ok {
			missing = append(missing, p)
		}
		delete(docs, p)
	}
	if len(missing) > 0 {
		t.Errorf("keys without documentation in keys.go: %q", missing)
	}
	for p := range docs {
		t.Errorf("keys.go documents %q, which is not a key of Config", p)
	}
}

// patternOf maps a concrete path of the origins ("plugins.routerapi.core.port",
// "networks[0]", "notify.x.http.headers.Accept") to its schema pattern.
func patternOf(path string) string {
	path = regexp.MustCompile(`\[\d+\]`).ReplaceAllString(path, "")
	f := schema()
	var out []string
	segs := strings.Split(path, ".")
	for i := 0; i < len(segs); i++ {
		c := f.byName[segs[i]]
		if c == nil {
			return ""
		}
		out = append(out, c.name)
		switch c.kind {
		case kindInstances:
			if i+1 < len(segs) {
				out = append(out, "*")
				i++
			}
		case kindHeaders:
			return strings.Join(out, ".")
		}
		f = c
	}
	return strings.Join(out, ".")
}

func TestStarterLoads(t *testing.T) {
	nets := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.168.1.0/24")}
	for _, host := range []string{"", "nas"} {
		t.Run("host="+host, func(t *testing.T) {
			src := Starter(nets, host)
			c := mustLoad(t, string(src))
			want := Defaults()
			want.Networks = nets
			// The one choice the starter makes for a person at a
			// terminal: text logs (the service's default is json).
			want.Logger.Format = "text"
			if diff := cmp.Diff(&want, c, cmpNet...); diff != "" {
				t.Errorf("the starter is not the defaults but text logs (-want +got):\n%s", diff)
			}
			if host != "" && !bytes.Contains(src, []byte("sweep:"+host)) {
				t.Errorf("hostname not used")
			}
		})
	}
	// No networks: an empty list.
	c := mustLoad(t, string(Starter(nil, "")))
	if len(c.Networks) != 0 {
		t.Errorf("networks %v", c.Networks)
	}
}

// TestStarterEveryKey uncomments the examples and checks that the file then
// sets every key of the schema, loads without a problem, and has a comment
// with the default and allowed values above every key.
func TestStarterEveryKey(t *testing.T) {
	src := starter([]netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}, "nas", true)
	commented := Starter([]netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}, "nas")
	if got := uncomment(commented); !bytes.Equal(got, src) {
		t.Errorf("removing the leading \"# \" from the examples does not give the live file:\n%s", cmp.Diff(string(src), string(got)))
	}
	path := filepath.Join(t.TempDir(), "jocasta.yaml")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLoader(path)
	c := Defaults()
	l.decodeFile(src, &c)
	l.validate(&c)
	if len(l.problems) > 0 || len(l.warnings) > 0 {
		t.Fatalf("live starter: %s %q", render(l.problems), l.warnings)
	}
	set := map[string]bool{}
	lines := strings.Split(string(src), "\n")
	for p, o := range l.origins {
		pat := patternOf(p)
		set[pat] = true
		if strings.Contains(p, "[") || strings.Count(p, ".") > strings.Count(pat, ".") {
			continue // list items and header entries are values, not keys
		}
		above := strings.TrimSpace(lines[o.keyLine-2])
		if !strings.HasPrefix(above, "#") {
			t.Errorf("%s (line %d) has no comment above it", p, o.keyLine)
		}
	}
	for _, p := range patterns() {
		if !set[p] {
			t.Errorf("the starter lacks %s", p)
		}
	}
	// Every leaf comment gives a default; allowed values for all but headers' doc.
	if n, want := strings.Count(string(src), " Default:"), leafCount(); n < want {
		t.Errorf("%d comments with a default, want at least %d (one per key)", n, want)
	}
}

func leafCount() int {
	n := 0
	schema().walk(func(f *field) {
		if f.isLeaf() || f.kind == kindHeaders {
			n++
		}
	})
	return n
}

// uncomment removes "# " from the start of the lines of the commented-out
// plugin and notify examples, as a user would.
func uncomment(src []byte) []byte {
	var out []string
	in := false
	nested := "" // "# " and the indentation of a nested example's key
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "# plugins:") || strings.HasPrefix(line, "# notify:") {
			in = true
			// The section comment just above belongs to the block too.
			for i := len(out) - 1; i >= 0 && strings.HasPrefix(out[i], "# # "); i-- {
				out[i] = strings.TrimPrefix(out[i], "# ")
			}
		}
		if line == "" {
			in = false
		}
		// A nested example (nestedExamples): "# " and an indented key,
		// its comment just above, and the lines below it indented deeper.
		if nested != "" && !strings.HasPrefix(line, nested+" ") {
			nested = ""
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok && !in && nested == "" && strings.HasPrefix(rest, " ") && strings.HasSuffix(rest, ":") {
			nested = "# " + rest[:len(rest)-len(strings.TrimLeft(rest, " "))]
			for i := len(out) - 1; i >= 0 && strings.HasPrefix(out[i], nested+"# "); i-- {
				out[i] = strings.TrimPrefix(out[i], "# ")
			}
			line = rest
		} else if nested != "" {
			line = strings.TrimPrefix(line, "# ")
		}
		if in {
			line = strings.TrimPrefix(strings.TrimPrefix(line, "# "), "#")
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n"))
}

// TestExampleFile keeps config.example.yaml equal to the starter for
// 192.168.1.0/24; run with -update to rewrite it.
func TestExampleFile(t *testing.T) {
	want := Starter([]netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}, "")
	if *update {
		if err := os.WriteFile(exampleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatalf("%v (create it with go test -run TestExampleFile -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("config.example.yaml differs from Starter; run go test ./cmd/internal/config -run TestExampleFile -update\n%s", cmp.Diff(string(want), string(got)))
	}
	mustLoad(t, string(got))
}

func TestStarterComments(t *testing.T) {
	src := string(Starter(nil, "nas"))
	for _, want := range []string{
		"# Listen port. Default: 8080. Allowed: 1 to 65535.",
		"Default: empty, meaning sweep:nas.",
		"#       # REST API port. Default: 80, or 443 with ssl. Allowed: 1 to 65535.",
		"SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD",
		"networks: []",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("starter lacks %q", want)
		}
	}
	for i, line := range strings.Split(src, "\n") {
		if len(line) > commentWidth {
			t.Errorf("line %d is %d characters long: %q", i+1, len(line), line)
		}
	}
	if !strings.Contains(src, "\n# # Plugin sources. Plugins are off by default.") || !strings.Contains(src, "\n# plugins:\n") {
		t.Errorf("plugins section comment not commented out as expected")
	}
}
