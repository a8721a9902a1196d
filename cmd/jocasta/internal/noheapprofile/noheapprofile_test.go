// An external test package: the package itself must keep no imports but
// runtime (a test file in it would add testing's, and it would then be
// initialized after them).
package noheapprofile_test

import (
	"runtime"
	"runtime/metrics"
	"testing"

	_ "github.com/jocasta/jocasta/cmd/jocasta/internal/noheapprofile"
)

func bucketBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/profiling/buckets:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var sink [][]byte

// TestOff: the rate is 0, and allocations are no longer sampled: the
// profiler's tables do not grow (at the default rate, 16 MiB allocated
// from new call stacks adds buckets; the table itself may have been made
// by a sample before the package's init, but is then left untouched).
func TestOff(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Fatalf("MemProfileRate %d", runtime.MemProfileRate)
	}
	before := bucketBytes()
	for range 64 {
		sink = append(sink, allocA(), allocB())
	}
	sink = nil
	if after := bucketBytes(); after != before {
		t.Fatalf("profiling buckets grew from %d to %d bytes", before, after)
	}
}

//go:noinline
func allocA() []byte { return make([]byte, 128<<10) }

//go:noinline
func allocB() []byte { return make([]byte, 128<<10) }
