package store

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// The clone's writer copies a section of a file in the kernel, from
// where the section reader stands, and anything else through a buffer;
// either way the bytes land after what was written before. Each case
// runs with the kernel's copy in one part and split into four.
func TestFileCopier(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(map[bool]string{false: "one part", true: "four parts"}[split], func(t *testing.T) {
			if split {
				part, threads := copyPart, copyThreads
				copyPart, copyThreads = 256<<10, func() int { return 4 }
				defer func() { copyPart, copyThreads = part, threads }()
			}
			testFileCopier(t)
		})
	}
}

func testFileCopier(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	srcPath := filepath.Join(dir, "src")
	if err := os.WriteFile(srcPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	writeOnly, err := os.OpenFile(srcPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer writeOnly.Close()
	head := []byte("two meta pages")
	for _, c := range []struct {
		name       string
		reader     func() io.Reader
		n          int64
		want       []byte
		wantKernel int64 // bytes the kernel copies
		wantErr    bool  // and then want holds what was copied before it
	}{
		{"a section of a file", func() io.Reader { return io.NewSectionReader(src, 4096, int64(len(data))-4096) },
			int64(len(data)) - 4096, data[4096:], int64(len(data)) - 4096, false},
		{"a section that ends in the last of several parts", func() io.Reader { return io.NewSectionReader(src, 8192, 3<<20-9000) },
			3<<20 - 9000, data[8192 : 8192+3<<20-9000], 3<<20 - 9000, false},
		{"part of a section, read from its middle", func() io.Reader {
			sr := io.NewSectionReader(src, 100, 2<<20)
			if _, err := sr.Seek(1000, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			return sr
		}, 1 << 20, data[1100 : 1100+1<<20], 1 << 20, false},
		{"not a file", func() io.Reader { return bytes.NewReader(data[:5000]) }, 5000, data[:5000], 0, false},
		{"a section past the end of its file: the kernel copies what is there, the buffer finds the end",
			func() io.Reader { return io.NewSectionReader(src, int64(len(data))-1000, 5000) }, 5000, data[len(data)-1000:], 1000, true},
		{"a section that runs 1 MiB past the end of its file: the parts past it copy nothing",
			func() io.Reader { return io.NewSectionReader(src, int64(len(data))-1<<20, 2<<20) }, 2 << 20, data[len(data)-1<<20:], 1 << 20, true},
		{"a file the kernel cannot read: the buffer reports why",
			func() io.Reader { return io.NewSectionReader(writeOnly, 0, 4096) }, 4096, nil, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := os.Create(filepath.Join(dir, "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			fc := &fileCopier{f: out}
			if _, err := fc.Write(head); err != nil {
				t.Fatal(err)
			}
			n, err := io.CopyN(fc, c.reader(), c.n)
			if c.wantErr {
				if err == nil || n != int64(len(c.want)) {
					t.Fatalf("CopyN = %d, %v; want %d and an error", n, err, len(c.want))
				}
			} else if err != nil || n != c.n {
				t.Fatalf("CopyN = %d, %v; want %d", n, err, c.n)
			}
			got, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(append([]byte(nil), head...), c.want...)) {
				t.Fatalf("the copy differs (%d bytes, want %d)", len(got), len(head)+len(c.want))
			}
			if fc.kernel != c.wantKernel {
				t.Errorf("the kernel copied %d bytes, want %d", fc.kernel, c.wantKernel)
			}
		})
	}
}
