// An external test package: the package itself must keep no imports but
// runtime (a test file in it would add testing's, and it would then be
// initialized after them).
package noheapprofile_test

import (
	"runtime"
	"testing"

	_ "github.com/jocasta/jocasta/cmd/jocasta/internal/noheapprofile"
)

// sampled is how many allocations the heap profile has recorded.
func sampled(t *testing.T) int64 {
	t.Helper()
	runtime.GC() // the profile is published a cycle or two late
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+64)
	n, ok := runtime.MemProfile(recs, true)
	if !ok {
		t.Fatal("the heap profile grew while read")
	}
	var sum int64
	for _, r := range recs[:n] {
		sum += r.AllocObjects
	}
	return sum
}

var sink [][]byte

// TestOff: the rate is 0, and allocations are no longer sampled. 16 MiB
// allocated is about 32 samples at the default rate; with the rate 0 the
// runtime still takes one on each P whose next allocation notices the
// change, and no more.
func TestOff(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Fatalf("MemProfileRate %d", runtime.MemProfileRate)
	}
	before := sampled(t)
	for range 128 {
		sink = append(sink, make([]byte, 128<<10))
	}
	sink = nil
	if n := sampled(t) - before; n > int64(runtime.GOMAXPROCS(0)) {
		t.Fatalf("%d allocations sampled", n)
	}
}
