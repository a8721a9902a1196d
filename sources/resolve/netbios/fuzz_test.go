package netbios

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseNodeStatus(f *testing.F) {
	f.Add(buildResponse(1, sampleNames, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(buildResponse(1, nil, nil))
	f.Add(AppendRequest(nil, 1))
	if b, err := os.ReadFile(filepath.Join("testdata", "nmbd-4.17.bin")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseNodeStatus(b)
		if err != nil {
			return
		}
		if len(st.Names) > 255 {
			t.Fatalf("%d names from a one-byte count", len(st.Names))
		}
		if st.MAC != nil && len(st.MAC) != 6 {
			t.Fatalf("MAC of %d bytes", len(st.MAC))
		}
		_ = st.ComputerName()
		_ = st.Workgroup()
	})
}
