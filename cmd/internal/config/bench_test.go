package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAliasBomb: aliases that multiply the work must stop with a problem,
// not run for ever: merge keys doubling at each level hit the merge depth
// limit, and a wide mapping aliased many times hits the node budget.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-0: &a0 {user: u}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "x-%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("plugins:\n  routerapi:\n    r: {<<: *a40}\n")
	if ps := problems(t, b.String()); !strings.Contains(render(ps), "nested more than") {
		t.Errorf("deep merges:\n%s", render(ps))
	}

	b.Reset()
	b.WriteString("x-h: &h {")
	for i := range 300 {
		fmt.Fprintf(&b, "H%d: v, ", i)
	}
	b.WriteString("}\nnotify:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  d%d: {http: {url: \"https://x\", body: b, headers: *h}}\n", i)
	}
	if ps := problems(t, b.String()); !strings.Contains(render(ps), "too large once its aliases are expanded") {
		t.Errorf("wide aliases:\n%s", render(ps)[:min(2000, len(render(ps)))])
	}
}

func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(b.TempDir(), "jocasta.yaml")
	if err := os.WriteFile(path, starter([]netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}, "h", true), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"SVC_SERVER__PORT=9000", "SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD=x"}
	for b.Loop() {
		if _, err := Load(path, env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkYAML(b *testing.B) {
	c, err := Load("", []string{"SVC_NETWORKS=192.168.1.0/24"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.YAML(); err != nil {
			b.Fatal(err)
		}
	}
}
