package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// FuzzLoad feeds arbitrary bytes to Load through a file. Load must never
// panic, must return either a config or an *Error, and when the bytes parse
// as YAML every problem must carry a line.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(Starter([]netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}, "h"))
	f.Add(starter(nil, "", true))
	f.Add([]byte(secretsYAML))
	for _, s := range []string{
		"", "a: &a [*a]", "server: &s {cors: *s}", "<<: *x", "x-a: &a {port: 1}\nserver: {<<: *a}",
		"notify: {n: {http: {url: 'https://x', body: '{{'}}}", "networks: [::/0]", "server:\n  port: !!str 1",
		"plugins: {routerapi: {A: {}}}", "? [a]\n: b", "--- \n...\n---\na: 1", "server: {host: [a, {b: c}]}",
		"notify:\n  h:\n    http:\n      url: https://x\n      body: |\n        {{\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err == nil {
			if c == nil {
				t.Fatal("nil config without error")
			}
			if _, yerr := c.YAML(); yerr != nil {
				t.Fatal(yerr)
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("Load error %T %v, want *Error with problems", err, err)
		}
		if _, perr := parser.ParseBytes(src, 0); perr != nil {
			return
		}
		for _, p := range ce.Problems {
			if p.Line <= 0 || p.File != path {
				t.Fatalf("problem without a line: %+v\n--- input:\n%q", p, src)
			}
		}
	})
}
