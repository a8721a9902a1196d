package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemoryAvailable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	meminfo := write("meminfo", "MemTotal:        2048000 kB\nMemFree:          100000 kB\n")
	const machine = 2048000 << 10
	// A cgroup v2 tree: a limit on the parent, none on the process's own.
	write("v2/memory.max", "max\n") // the root has no file on a real system: tolerated
	write("v2/jocasta.slice/memory.max", "536870912\n")
	write("v2/jocasta.slice/serve/memory.max", "max\n")
	// A cgroup v1 memory tree (as under Docker on an older host).
	write("v1/memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("v1/memory/docker/abc/memory.limit_in_bytes", "1073741824\n")
	for _, c := range []struct {
		name, meminfo, cgroup, root string
		want                        int64
	}{
		{"the machine's memory", meminfo, write("cg-none", "0::/\n"), filepath.Join(dir, "v2"), machine},
		{"a v2 limit on an ancestor wins", meminfo, write("cg-v2", "0::/jocasta.slice/serve\n"), filepath.Join(dir, "v2"), 536870912},
		{"a v1 memory controller's limit", meminfo, write("cg-v1", "9:name=systemd:/\n4:memory:/docker/abc\n1:cpu,cpuacct:/\n0::/\n"), filepath.Join(dir, "v1"), 1 << 30},
		{"v1 unlimited: the machine's", meminfo, write("cg-v1root", "4:memory:/\n"), filepath.Join(dir, "v1"), machine},
		{"a limit above the machine's memory", write("small", "MemTotal: 262144 kB\n"), write("cg-v2b", "0::/jocasta.slice/serve\n"), filepath.Join(dir, "v2"), 262144 << 10},
		{"only a cgroup limit", filepath.Join(dir, "absent"), write("cg-v2c", "0::/jocasta.slice\n"), filepath.Join(dir, "v2"), 536870912},
		{"nothing readable", filepath.Join(dir, "absent"), filepath.Join(dir, "absent"), dir, 0},
		{"a meminfo without MemTotal", write("odd", "MemFree: 1 kB\n"), filepath.Join(dir, "absent"), dir, 0},
	} {
		if got := memoryAvailable(c.meminfo, c.cgroup, c.root); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// writeFile writes body to name under dir, making its directories, and
// returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
