package flowlistener

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
)

// seeds are the datagrams in testdata (real exporters' and the
// generator's, see testdata/README.md) plus generated edge cases.
func seeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.bin")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	r := fg.Rec{Src: lan, Dst: wan, Proto: 6, SrcPort: 1, DstPort: 2, Bytes: 3, Packets: 4}
	r6 := fg.Rec{Src: lan6, Dst: wan6, Proto: 17, SrcPort: 1, DstPort: 2, Bytes: 3, Packets: 4}
	f.Add(fg.V5(1, 10, []fg.Rec{r, r}))
	f.Add(fg.NewV9(1, 1).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r}, 2).Bytes())
	f.Add(fg.NewV9(1, 1).OptionsTemplate(257, []fg.Field{{Type: 1, Len: 4}}, []fg.Field{{Type: 34, Len: 4}}).OptionsData(257, []fg.Field{{Type: 1, Len: 4}}, []fg.Field{{Type: 34, Len: 4}}, [][]uint64{{0, 5}}).Bytes())
	f.Add(fg.NewIPFIX(1, 1).Template(300, fg.Odd).Data(300, fg.Odd, []fg.Rec{r}, 1).Bytes())
	f.Add(fg.NewIPFIX(1, 1).Template(301, fg.V6).Data(301, fg.V6, []fg.Rec{r6}, 0).Withdraw(301).Bytes())
}

// fuzzOne decodes b after a datagram that defined templates, and checks
// the state's bounds: the decoder must never panic, and no length field
// may make it hold more than the limits allow.
func fuzzOne(t *testing.T, prime, b []byte) {
	d := &decoder{lifetime: DefaultTemplateLifetime, sink: func(f *flow) {
		if !usable(f.src, f.dst) || f.src.Is4() != f.dst.Is4() {
			t.Fatalf("a flow from %v to %v", f.src, f.dst)
		}
	}}
	ex := &exporter{addr: netip.MustParseAddr("192.0.2.1"), domains: map[uint64]*domain{}}
	if prime != nil {
		d.datagram(ex, prime, t0)
	}
	d.datagram(ex, b, t0)
	d.datagram(ex, b, t0)
	if len(ex.domains) > maxDomains {
		t.Fatalf("%d domains", len(ex.domains))
	}
	fields := 0
	for _, dm := range ex.domains {
		if len(dm.templates) > maxTemplates || len(dm.pending) > maxPendingSets || dm.pendingBytes > maxPendingBytes {
			t.Fatalf("domain over its limits: %d templates, %d pending (%d bytes)", len(dm.templates), len(dm.pending), dm.pendingBytes)
		}
		for _, tp := range dm.templates {
			if len(tp.fields) > len(b)/4+1 && len(tp.fields) > len(fg.V4) || len(tp.fields) > maxTemplateFields {
				t.Fatalf("a template of %d fields from a %d-byte datagram", len(tp.fields), len(b))
			}
			fields += tp.cost()
		}
	}
	if fields != ex.fields || fields > maxExporterFields {
		t.Fatalf("templates cost %d, accounted %d (limit %d)", fields, ex.fields, maxExporterFields)
	}
}

func FuzzV5(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 2 {
			b[0], b[1] = 0, 5
		}
		fuzzOne(t, nil, b)
	})
}

func FuzzV9(f *testing.F) {
	seeds(f)
	prime := fg.NewV9(1, 0).Template(256, fg.V4).Template(257, fg.V6).Bytes()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 2 {
			b[0], b[1] = 0, 9
		}
		fuzzOne(t, prime, b)
	})
}

func FuzzIPFIX(f *testing.F) {
	seeds(f)
	prime := fg.NewIPFIX(1, 0).Template(256, fg.V4).Template(257, fg.Odd).Bytes()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 2 {
			b[0], b[1] = 0, 10
		}
		fuzzOne(t, prime, b)
	})
}
