package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jocasta/jocasta/store/storetest"
)

// TestParseExecutablePages reads a recorded smaps (sed's, a dynamically
// linked binary): the code and read-only data of the file asked for
// qualify; its relocated read-only page (anonymous, written before it
// was made read-only), its writable data and every other file do not.
func TestParseExecutablePages(t *testing.T) {
	b, err := os.ReadFile("testdata/smaps/sed")
	if err != nil {
		t.Fatal(err)
	}
	recorded := string(b)
	sed := executablePages{
		{0x56451b005000, 0x56451b008000},
		{0x56451b008000, 0x56451b01c000},
		{0x56451b01c000, 0x56451b022000},
	}
	firstOnly := recorded[:strings.Index(recorded, "\n56451b008000-")+1]
	tests := []struct {
		name  string
		smaps string
		path  string
		want  executablePages
	}{
		{"the executable", recorded, "/usr/bin/sed", sed},
		{"another file", recorded, "/usr/lib/locale/C.utf8/LC_CTYPE", executablePages{{0x7f5549ded000, 0x7f5549e44000}}},
		{"a prefix of a path", recorded, "/usr/bin/se", nil},
		{"a path with spaces, deleted", strings.ReplaceAll(recorded, "/usr/bin/sed", "/opt/my apps/jocasta (deleted)"), "/opt/my apps/jocasta (deleted)", sed},
		{"the last mapping of the file", firstOnly, "/usr/bin/sed", sed[:1]},
		{"empty", "", "/usr/bin/sed", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseExecutablePages(strings.NewReader(tc.smaps), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
		})
	}
	if _, err := parseExecutablePages(strings.NewReader("zz-10 r-xp 00000000 fe:00 1 /usr/bin/sed\n"), "/usr/bin/sed"); err == nil {
		t.Fatal("a mapping with a bad address range was read without an error")
	}
}

// TestExecutablePagesRelease drops the test binary's own code and
// read-only data from its memory map: most of what was resident goes,
// and the process runs on (its code maps back in as it runs).
func TestExecutablePagesRelease(t *testing.T) {
	pages, err := findExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 2 {
		t.Fatalf("found %d of the executable's mappings, want its code and its read-only data: %x", len(pages), pages)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	before := storetest.MappedRss(t, exe)
	if before < 1<<20 {
		t.Fatalf("only %d bytes of the executable resident before the release: the test does not see its pages", before)
	}
	if err := pages.release(); err != nil {
		t.Fatal(err)
	}
	after := storetest.MappedRss(t, exe)
	if after > before/2 {
		t.Fatalf("resident bytes of the executable: %d before, %d after the release", before, after)
	}
	t.Logf("resident bytes of the executable: %d before, %d after the release", before, after)
	// The process runs on: code not run since the release (here the
	// parser's error path) maps back in.
	if _, err := parseExecutablePages(strings.NewReader("zz-10 r-xp 0 fe:00 1 x\n"), "x"); err == nil {
		t.Fatal("the parser misread after the release")
	}
}

// TestTraced: a status naming a tracer (a debugger's breakpoints are
// written into the code) stops the release; none, or no status, does not.
func TestTraced(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, status string
		want         bool
	}{
		{"untraced", "Name:\tjocasta\nTracerPid:\t0\nUid:\t0\n", false},
		{"traced", "Name:\tjocasta\nTracerPid:\t4242\nUid:\t0\n", true},
		{"no such line", "Name:\tjocasta\n", false},
	} {
		p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-"), tc.status)
		if got := traced(p); got != tc.want {
			t.Errorf("%s: traced %v, want %v", tc.name, got, tc.want)
		}
	}
	if traced(filepath.Join(dir, "absent")) {
		t.Error("an unreadable status counted as traced")
	}
}
