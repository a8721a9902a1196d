package sweeptargets

import (
	"cmp"
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
)

// MaxHostBits bounds a swept network: 2^24 addresses (an IPv4 /8, an
// IPv6 /104).
const MaxHostBits = 24

// Block is one prefix of a sweep. Its addresses are never listed: they
// are the network address + offset, for offset in [First, End).
type Block struct {
	Prefix netip.Prefix
	// First is the first offset walked, End the one after the last.
	First, End uint32

	v6    bool
	hi    [12]byte // an IPv6 network address's first 96 bits
	base  uint32   // the network address's last 32 bits
	inner []*Block
}

// Unmap returns p masked, with an IPv4-mapped IPv6 prefix (::ffff:a.b.c.d/n,
// n ≥ 96) turned into the IPv4 prefix it names. p must be valid.
func Unmap(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// HostBits is the number of host bits of p: 8 for a /24, 64 for an IPv6 /64.
func HostBits(p netip.Prefix) int { return p.Addr().BitLen() - p.Bits() }

// NewBlock returns the block of a masked prefix with at most
// [MaxHostBits] host bits, walking every address (First 0, End the
// prefix's size).
func NewBlock(p netip.Prefix) Block {
	b := Block{Prefix: p, v6: p.Addr().Is6(), End: uint32(Size(p))}
	a := p.Addr().As16()
	copy(b.hi[:], a[:12])
	b.base = uint32(a[12])<<24 | uint32(a[13])<<16 | uint32(a[14])<<8 | uint32(a[15])
	return b
}

// Size is the number of addresses of an IPv4 prefix, or of an IPv6
// prefix with fewer than 64 host bits.
func Size(p netip.Prefix) uint64 { return uint64(1) << HostBits(p) }

// V6 reports whether the block is an IPv6 prefix.
func (b *Block) V6() bool { return b.v6 }

// Count is the number of offsets walked (before overlaps are removed).
func (b *Block) Count() uint64 { return uint64(b.End - b.First) }

// Addr is the address at offset off.
func (b *Block) Addr(off uint32) netip.Addr {
	v := b.base + off
	if !b.v6 {
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	var a [16]byte
	copy(a[:12], b.hi[:])
	a[12], a[13], a[14], a[15] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return netip.AddrFrom16(a)
}

// Offset is the offset of a inside the prefix; ok is false outside it.
func (b *Block) Offset(a netip.Addr) (off uint32, ok bool) {
	if !b.Prefix.Contains(a) {
		return 0, false
	}
	x := a.As16()
	return (uint32(x[12])<<24 | uint32(x[13])<<16 | uint32(x[14])<<8 | uint32(x[15])) - b.base, true
}

// Walks reports whether off is in [First, End).
func (b *Block) Walks(off uint32) bool { return off >= b.First && off < b.End }

// Skip reports whether off is walked by a more specific block of the
// sweep instead. That block's own left-out addresses (outside its
// [First, End)) stay with this one.
func (b *Block) Skip(off uint32) bool {
	return len(b.inner) != 0 && b.skipInner(off) // inlined: most blocks have no inner block
}

func (b *Block) skipInner(off uint32) bool {
	a := b.Addr(off)
	for _, in := range b.inner {
		if o, ok := in.Offset(a); ok && in.Walks(o) {
			return true
		}
	}
	return false
}

// Owns reports whether the address at off is walked by this block: in
// [First, End) and not skipped.
func (b *Block) Owns(off uint32) bool { return b.Walks(off) && !b.Skip(off) }

// Nest sorts ts most specific first (fewest host bits, then by address;
// stable) and records in each block the earlier blocks that overlap it,
// for [Block.Skip]. block returns the Block of a T.
func Nest[T any](ts []T, block func(T) *Block) {
	slices.SortStableFunc(ts, func(x, y T) int {
		a, b := block(x).Prefix, block(y).Prefix
		if c := cmp.Compare(HostBits(a), HostBits(b)); c != 0 {
			return c
		}
		return a.Addr().Compare(b.Addr())
	})
	for i, t := range ts {
		b := block(t)
		for _, in := range ts[:i] {
			if b.Prefix.Overlaps(block(in).Prefix) {
				b.inner = append(b.inner, block(in))
			}
		}
	}
}

// Bits is one bit per offset of a block.
type Bits []atomic.Uint64

// NewBits returns n clear bits.
func NewBits(n uint64) Bits { return make(Bits, (n+63)/64) }

// Has reports whether the bit at off is set.
func (s Bits) Has(off uint32) bool { return s[off/64].Load()&(1<<(off%64)) != 0 }

// Set sets the bit at off and reports whether it was clear before.
func (s Bits) Set(off uint32) bool {
	b := uint64(1) << (off % 64)
	return s[off/64].Or(b)&b == 0
}

// Count is the number of set bits.
func (s Bits) Count() int {
	n := 0
	for i := range s {
		n += bits.OnesCount64(s[i].Load())
	}
	return n
}
