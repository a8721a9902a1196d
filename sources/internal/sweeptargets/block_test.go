package sweeptargets

import (
	"net/netip"
	"slices"
	"testing"
)

func block(p string, first, end uint32) *Block {
	b := NewBlock(netip.MustParsePrefix(p))
	b.First = first
	if end != 0 {
		b.End = end
	}
	return &b
}

// walk lists the addresses a nested sweep walks, block by block.
func walk(bs []*Block) []string {
	var out []string
	for _, b := range bs {
		for off := b.First; off < b.End; off++ {
			if !b.Skip(off) {
				out = append(out, b.Addr(off).String())
			}
		}
	}
	return out
}

func TestAddrOffset(t *testing.T) {
	tests := []struct {
		name, prefix, addr string
		off                uint32
	}{
		{"ipv4", "10.1.0.0/16", "10.1.2.3", 0x0203},
		{"ipv4 /32", "192.0.2.7/32", "192.0.2.7", 0},
		{"ipv6", "2001:db8::/104", "2001:db8::ab:cdef", 0xabcdef},
		{"ipv6 high bits kept", "2001:db8:1:2:3:4:500::/104", "2001:db8:1:2:3:4:500:1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBlock(netip.MustParsePrefix(tt.prefix))
			a := netip.MustParseAddr(tt.addr)
			if got := b.Addr(tt.off); got != a {
				t.Errorf("Addr(%d) = %v, want %v", tt.off, got, a)
			}
			if off, ok := b.Offset(a); !ok || off != tt.off {
				t.Errorf("Offset(%v) = %d, %v, want %d", a, off, ok, tt.off)
			}
		})
	}
	b := NewBlock(netip.MustParsePrefix("10.1.0.0/16"))
	for _, a := range []string{"10.2.0.1", "::ffff:10.1.0.1", "2001:db8::1"} {
		if _, ok := b.Offset(netip.MustParseAddr(a)); ok {
			t.Errorf("Offset(%s) inside 10.1.0.0/16", a)
		}
	}
}

func TestUnmapAndSize(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:10.1.2.3/120": "10.1.2.0/24",
		"10.1.2.3/24":         "10.1.2.0/24",
		"2001:db8::1/64":      "2001:db8::/64",
	} {
		if got := Unmap(netip.MustParsePrefix(in)); got.String() != want {
			t.Errorf("Unmap(%s) = %v, want %s", in, got, want)
		}
	}
	if n := Size(netip.MustParsePrefix("10.0.0.0/8")); n != 1<<24 {
		t.Errorf("Size(/8) = %d", n)
	}
	if b := NewBlock(netip.MustParsePrefix("2001:db8::/120")); b.Count() != 256 {
		t.Errorf("Count(/120) = %d", b.Count())
	}
}

// An address in two blocks is walked once, by the most specific block
// that walks it; a block's left-out addresses stay with the outer one.
func TestNest(t *testing.T) {
	outer := block("10.0.0.0/29", 1, 7)  // .1 to .6
	inner := block("10.0.0.4/30", 1, 3)  // .5, .6; .4 and .7 left out
	other := block("10.0.0.16/30", 0, 0) // unrelated
	bs := []*Block{outer, other, inner}
	Nest(bs, func(b *Block) *Block { return b })
	if !slices.Equal(bs, []*Block{inner, other, outer}) {
		t.Fatalf("order %v %v %v", bs[0].Prefix, bs[1].Prefix, bs[2].Prefix)
	}
	want := []string{"10.0.0.5", "10.0.0.6", "10.0.0.16", "10.0.0.17", "10.0.0.18", "10.0.0.19",
		"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}
	if got := walk(bs); !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
	if off, _ := outer.Offset(netip.MustParseAddr("10.0.0.5")); outer.Owns(off) {
		t.Error("outer owns .5")
	}
	if off, _ := outer.Offset(netip.MustParseAddr("10.0.0.4")); !outer.Owns(off) {
		t.Error("outer does not own .4")
	}
	if off, _ := outer.Offset(netip.MustParseAddr("10.0.0.7")); outer.Owns(off) {
		t.Error("outer owns .7, outside its [First, End)")
	}
}

func TestBits(t *testing.T) {
	s := NewBits(130)
	if len(s) != 3 {
		t.Fatalf("len %d, want 3", len(s))
	}
	if !s.Set(129) || s.Set(129) || !s.Has(129) || s.Has(128) {
		t.Error("Set/Has on bit 129")
	}
	s.Set(0)
	if n := s.Count(); n != 2 {
		t.Errorf("Count %d, want 2", n)
	}
}
