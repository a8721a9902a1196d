package oui

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

func mustMAC(t testing.TB, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatalf("ParseMAC(%q): %v", s, err)
	}
	return m
}

// loadReal loads the embedded registry; without the generated file the
// test fails under CI and skips loudly elsewhere.
func loadReal(t testing.TB) *Registry {
	t.Helper()
	r, err := Load()
	if errors.Is(err, ErrNoData) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is not embedded: run `cd projections/oui/gen && npm install --no-audit --no-fund && node gen.mjs ../data/oui.tsv.gz` before go test", dataFile)
		}
		t.Skipf("SKIPPED: %s not generated; run the generator in projections/oui/gen (see data/README.md) to test the real registry", dataFile)
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

func TestRegistryHasData(t *testing.T) {
	r := loadReal(t)
	// oui-data 2.1.9 holds 40,010 MA-L, 6,565 MA-M and 7,155 MA-S entries.
	if got := len(r.mal); got < 30000 {
		t.Errorf("MA-L entries = %d, want ≥ 30000", got)
	}
	if got := len(r.mam); got < 5000 {
		t.Errorf("MA-M entries = %d, want ≥ 5000", got)
	}
	if got := len(r.mas); got < 5000 {
		t.Errorf("MA-S entries = %d, want ≥ 5000", got)
	}
	if r.Len() != len(r.mal)+len(r.mam)+len(r.mas) {
		t.Errorf("Len() = %d disagrees with the tables", r.Len())
	}
	tests := []struct {
		name, mac, want string
	}{
		{"MA-L Apple", "00:1b:63:12:34:56", "Apple, Inc."},
		{"MA-L Raspberry Pi", "b8:27:eb:aa:bb:cc", "Raspberry Pi Foundation"},
		{"MA-L VMware", "00:50:56:01:02:03", "VMware, Inc."},
		{"MA-L Cisco upper case", "00:00:0C:07:AC:01", "Cisco Systems, Inc"},
		// C8:5C:E2 is an MA-L of the IEEE RA, sub-assigned as MA-M blocks.
		{"MA-M block 0 of C8:5C:E2", "c8:5c:e2:01:02:03", "Fela Management AG"},
		{"MA-M block 1 of C8:5C:E2", "c8:5c:e2:1f:ff:ff", "Annapurna labs"},
		// 8C:1F:64 is sub-assigned as MA-S blocks (36-bit prefixes).
		{"MA-S 8C:1F:64:00:0", "8c:1f:64:00:0a:bc", "Suzhou Xingxiangyi Precision Manufacturing Co.,Ltd."},
		{"MA-S 8C:1F:64:00:1", "8c:1f:64:00:1f:ff", "HYFIX Spatial Intelligence"},
		{"MA-S 70:B3:D5:00:1", "70:b3:d5:00:10:00", "SOREDI touch systems GmbH"},
		// An MA-S block the registry does not list falls back to the MA-L
		// holder.
		{"unlisted MA-S falls back to MA-L", "8c:1f:64:ff:f0:00", "IEEE Registration Authority"},
		{"EUI-64 uses the same prefixes", "00:1b:63:ff:fe:12:34:56", "Apple, Inc."},
		{"locally administered", "da:a1:19:12:34:56", ""},
		{"locally administered with a vendor's other bits", "02:1b:63:12:34:56", ""},
		{"QEMU locally administered", "52:54:00:12:34:56", ""},
		{"unassigned universal prefix", "0c:00:00:12:34:56", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Lookup(mustMAC(t, tt.mac)); got != tt.want {
				t.Errorf("Lookup(%s) = %q, want %q", tt.mac, got, tt.want)
			}
		})
	}
}

func TestRandom(t *testing.T) {
	tests := []struct {
		mac  net.HardwareAddr
		want bool
	}{
		{net.HardwareAddr{0x00, 0x1b, 0x63, 1, 2, 3}, false},
		{net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, true},
		{net.HardwareAddr{0xda, 0xa1, 0x19, 1, 2, 3}, true},
		{net.HardwareAddr{0x52, 0x54, 0, 1, 2, 3}, true},
		{net.HardwareAddr{0x01, 0x00, 0x5e, 0, 0, 1}, false}, // multicast, universal
		{net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true},
		{nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.mac.String(), func(t *testing.T) {
			if got := Random(tt.mac); got != tt.want {
				t.Errorf("Random(%v) = %v, want %v", tt.mac, got, tt.want)
			}
		})
	}
}

func TestParseLookup(t *testing.T) {
	const data = "001B63\tApple, Inc.\n" +
		"C85CE2\tIEEE Registration Authority\n" +
		"C85CE20\tFela Management AG\n" +
		"8C1F64\tIEEE Registration Authority\n" +
		"8c1f64001\tHYFIX Spatial Intelligence\n" +
		"000000\tXEROX CORPORATION\n" +
		"FCFFAA\tBURG-WÄCHTER KG\n"
	r, err := Parse(strings.NewReader(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if r.Len() != 7 {
		t.Errorf("Len() = %d, want 7", r.Len())
	}
	// "IEEE Registration Authority" is stored once.
	if got := len(r.offs) - 1; got != 6 {
		t.Errorf("distinct names = %d, want 6", got)
	}
	tests := []struct{ mac, want string }{
		{"00:1b:63:00:00:00", "Apple, Inc."},
		{"00:1b:63:ff:ff:ff", "Apple, Inc."},
		{"00:1b:64:00:00:00", ""},
		{"00:1b:62:ff:ff:ff", ""},
		{"c8:5c:e2:0f:ff:ff", "Fela Management AG"},
		{"c8:5c:e2:10:00:00", "IEEE Registration Authority"},
		{"8c:1f:64:00:1f:ff", "HYFIX Spatial Intelligence"},
		{"8c:1f:64:00:20:00", "IEEE Registration Authority"},
		{"8c:1f:64:00:0f:ff", "IEEE Registration Authority"},
		{"00:00:00:00:00:00", "XEROX CORPORATION"},
		{"fc:ff:aa:01:02:03", "BURG-WÄCHTER KG"},
		{"fe:ff:aa:01:02:03", ""}, // locally administered
	}
	for _, tt := range tests {
		t.Run(tt.mac, func(t *testing.T) {
			if got := r.Lookup(mustMAC(t, tt.mac)); got != tt.want {
				t.Errorf("Lookup(%s) = %q, want %q", tt.mac, got, tt.want)
			}
		})
	}
	t.Run("short address", func(t *testing.T) {
		if got := r.Lookup(net.HardwareAddr{0x00, 0x1b, 0x63}); got != "" {
			t.Errorf("Lookup(3 bytes) = %q, want \"\"", got)
		}
	})
	t.Run("nil and empty registry", func(t *testing.T) {
		var nilReg *Registry
		if got := nilReg.Lookup(mustMAC(t, "00:1b:63:00:00:00")); got != "" || nilReg.Len() != 0 {
			t.Errorf("nil registry: Lookup = %q, Len = %d", got, nilReg.Len())
		}
		var zero Registry
		if got := zero.Lookup(mustMAC(t, "00:1b:63:00:00:00")); got != "" || zero.Len() != 0 {
			t.Errorf("zero registry: Lookup = %q, Len = %d", got, zero.Len())
		}
	})
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"no tab", "001B63 Apple\n", "line 1: no tab"},
		{"short prefix", "001B6\tApple\n", "prefix of 5 hex digits"},
		{"8 digit prefix", "001B6300\tApple\n", "prefix of 8 hex digits"},
		{"not hex", "001G63\tApple\n", "not hexadecimal"},
		{"empty name", "001B63\t\n", "empty organisation name"},
		{"empty line", "001B63\tApple\n\n", "line 2: no tab"},
		{"control character", "001B63\tApp\x01le\n", "control character"},
		{"tab in name", "001B63\tApple\tInc\n", "control character"},
		{"CRLF line end", "001B63\tApple\r\n", "control character"},
		{"invalid UTF-8", "001B63\tApple\xff\n", "not UTF-8"},
		{"long name", "001B63\t" + strings.Repeat("x", 257) + "\n", "longer than 256 bytes"},
		{"very long line", "001B63\t" + strings.Repeat("x", 100000) + "\n", "longer than"},
		{"duplicate", "001B63\tApple\n001b63\tOther\n", "001B63 listed twice"},
		{"duplicate MA-S", "8C1F64001\tA\n8C1F64001\tA\n", "8C1F64001 listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(strings.NewReader(tt.data))
			if err == nil {
				t.Fatalf("Parse succeeded with %d entries, want error containing %q", r.Len(), tt.want)
			}
			if !errors.Is(err, ErrBadData) {
				t.Errorf("error %v does not wrap ErrBadData", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseEmpty(t *testing.T) {
	r, err := Parse(strings.NewReader(""))
	if err != nil {
		t.Fatalf("Parse(\"\"): %v", err)
	}
	if r.Len() != 0 || r.Lookup(mustMAC(t, "00:1b:63:00:00:00")) != "" {
		t.Errorf("empty input gave a non-empty registry")
	}
}

// TestRegistryHeap measures the heap a loaded registry retains; the
// service has an 80 MB RSS budget, of which the registry may take 4 MiB.
func TestRegistryHeap(t *testing.T) {
	if _, err := Load(); err != nil {
		loadReal(t) // fails under CI, skips otherwise
	}
	heap := retainedHeap(t)
	t.Logf("a loaded registry retains %d bytes of heap", heap)
	if heap > 4<<20 {
		t.Errorf("registry retains %d bytes, want ≤ 4 MiB", heap)
	}
}

func retainedHeap(t testing.TB) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

func BenchmarkLookup(b *testing.B) {
	r := loadReal(b)
	macs := []net.HardwareAddr{
		mustMAC(b, "00:1b:63:12:34:56"), // MA-L
		mustMAC(b, "c8:5c:e2:01:02:03"), // MA-M
		mustMAC(b, "8c:1f:64:00:1a:bc"), // MA-S
		mustMAC(b, "0c:00:00:12:34:56"), // unknown: three misses
		mustMAC(b, "da:a1:19:12:34:56"), // locally administered
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = r.Lookup(macs[i%len(macs)])
	}
}

func BenchmarkLoad(b *testing.B) {
	loadReal(b)
	heap := retainedHeap(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(heap), "retained-heap-B")
}

func TestLoadFS(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	t.Run("missing file", func(t *testing.T) {
		r, err := loadFS(fstest.MapFS{"data/README.md": {Data: []byte("x")}})
		if !errors.Is(err, ErrNoData) {
			t.Fatalf("error = %v, want ErrNoData", err)
		}
		if r == nil || r.Len() != 0 || r.Lookup(mustMAC(t, "00:1b:63:00:00:00")) != "" {
			t.Fatalf("want an empty, usable registry, got %v", r)
		}
	})
	t.Run("not gzip", func(t *testing.T) {
		r, err := loadFS(fstest.MapFS{dataFile: {Data: []byte("001B63\tApple\n")}})
		if !errors.Is(err, ErrBadData) || r == nil || r.Len() != 0 {
			t.Fatalf("Load = %v, %v; want an empty registry and ErrBadData", r, err)
		}
	})
	t.Run("bad lines", func(t *testing.T) {
		r, err := loadFS(fstest.MapFS{dataFile: {Data: gz("001B63 Apple\n")}})
		if !errors.Is(err, ErrBadData) || r == nil || r.Len() != 0 {
			t.Fatalf("Load = %v, %v; want an empty registry and ErrBadData", r, err)
		}
	})
	t.Run("truncated gzip", func(t *testing.T) {
		data := gz(strings.Repeat("001B63\tApple\n", 1))
		_, err := loadFS(fstest.MapFS{dataFile: {Data: data[:len(data)-6]}})
		if err == nil {
			t.Fatal("a truncated file loaded")
		}
	})
	t.Run("good", func(t *testing.T) {
		r, err := loadFS(fstest.MapFS{dataFile: {Data: gz("001B63\tApple, Inc.\n")}})
		if err != nil || r.Lookup(mustMAC(t, "00:1b:63:00:00:01")) != "Apple, Inc." {
			t.Fatalf("Load = %v, %v", r, err)
		}
	})
}
