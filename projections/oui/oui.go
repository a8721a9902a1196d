package oui

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"slices"
	"strings"
	"unicode/utf8"
)

//go:embed data
var dataFS embed.FS

// dataFile is the generated registry inside dataFS.
const dataFile = "data/oui.tsv.gz"

// Limits of Parse, far above the real registry (53,730 lines, 1.7 MB), so
// that a damaged file cannot make the process allocate without bound.
const (
	maxLines     = 1 << 20
	maxNameBytes = 256
	maxDataBytes = 64 << 20
)

// entry is one prefix and the index of its organisation name in the
// arena.
type entry[K uint32 | uint64] struct {
	key  K
	name uint32
}

// table is one block size: entries sorted by prefix.
type table[K uint32 | uint64] []entry[K]

func (t table[K]) find(k K) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(t, k, func(e entry[K], k K) int { return cmp.Compare(e.key, k) })
	if !ok {
		return 0, false
	}
	return t[i].name, true
}

// Registry maps prefixes to organisation names. The zero value is an empty
// registry. It is immutable after Load or Parse and safe for concurrent use.
type Registry struct {
	mal table[uint32] // 24-bit MA-L prefixes
	mam table[uint32] // 28-bit MA-M prefixes
	mas table[uint64] // 36-bit MA-S prefixes
	// arena holds every distinct name once; name i is
	// arena[offs[i]:offs[i+1]].
	arena string
	offs  []uint32
}

// Load parses the embedded registry. When the binary was built without
// the generated file it returns an empty registry and ErrNoData (the
// registry is still usable: every lookup answers "").
func Load() (*Registry, error) {
	return loadFS(dataFS)
}

// loadFS reads dataFile from fsys.
func loadFS(fsys fs.FS) (*Registry, error) {
	f, err := fsys.Open(dataFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &Registry{}, ErrNoData
	}
	if err != nil {
		return &Registry{}, fmt.Errorf("oui: opening embedded %s: %w", dataFile, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return &Registry{}, fmt.Errorf("oui: reading embedded %s: %w: %w", dataFile, ErrBadData, err)
	}
	defer zr.Close()
	r, err := Parse(zr)
	if err != nil {
		return &Registry{}, fmt.Errorf("oui: embedded %s: %w", dataFile, err)
	}
	return r, nil
}

// Parse reads uncompressed registry lines "PREFIX\tName\n" (the format of
// data/oui.tsv.gz once decompressed). PREFIX is 6, 7 or 9 hex digits; the
// name is non-empty valid UTF-8 without control characters, at most 256
// bytes. Lines may come in any order; a repeated prefix, an empty line or
// any other deviation is an error wrapping ErrBadData that names the line.
func Parse(rd io.Reader) (*Registry, error) {
	b := &builder{ids: make(map[string]uint32)}
	sc := bufio.NewScanner(io.LimitReader(rd, maxDataBytes+1))
	sc.Buffer(make([]byte, 0, 512), 16+maxNameBytes+2)
	sc.Split(splitLF)
	var total int
	line := 0
	for sc.Scan() {
		line++
		if line > maxLines {
			return nil, fmt.Errorf("oui: more than %d lines: %w", maxLines, ErrBadData)
		}
		total += len(sc.Bytes()) + 1
		if total > maxDataBytes {
			return nil, fmt.Errorf("oui: more than %d bytes: %w", maxDataBytes, ErrBadData)
		}
		if err := b.add(sc.Bytes()); err != nil {
			return nil, fmt.Errorf("oui: line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("oui: line %d: longer than %d bytes: %w", line+1, 16+maxNameBytes, ErrBadData)
		}
		return nil, fmt.Errorf("oui: reading registry: %w", err)
	}
	return b.finish()
}

// splitLF splits at '\n' only; unlike bufio.ScanLines it keeps a '\r',
// which the name check then rejects.
func splitLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

type builder struct {
	mal, mam table[uint32]
	mas      table[uint64]
	arena    strings.Builder
	offs     []uint32
	ids      map[string]uint32
}

func (b *builder) add(ln []byte) error {
	tab := bytes.IndexByte(ln, '\t')
	if tab < 0 {
		return fmt.Errorf("no tab between prefix and name: %w", ErrBadData)
	}
	hex, name := ln[:tab], ln[tab+1:]
	var v uint64
	if n := len(hex); n != 6 && n != 7 && n != 9 {
		return fmt.Errorf("prefix of %d hex digits, want 6, 7 or 9: %w", n, ErrBadData)
	}
	for _, c := range hex {
		d, ok := hexDigit(c)
		if !ok {
			return fmt.Errorf("prefix %q is not hexadecimal: %w", hex, ErrBadData)
		}
		v = v<<4 | uint64(d)
	}
	if err := checkName(name); err != nil {
		return err
	}
	id, ok := b.ids[string(name)]
	if !ok {
		if len(b.offs) == 0 {
			b.offs = append(b.offs, 0)
		}
		id = uint32(len(b.offs) - 1)
		b.arena.Write(name)
		b.offs = append(b.offs, uint32(b.arena.Len()))
		b.ids[string(name)] = id
	}
	switch len(hex) {
	case 6:
		b.mal = append(b.mal, entry[uint32]{uint32(v), id})
	case 7:
		b.mam = append(b.mam, entry[uint32]{uint32(v), id})
	default:
		b.mas = append(b.mas, entry[uint64]{v, id})
	}
	return nil
}

func checkName(name []byte) error {
	if len(name) == 0 {
		return fmt.Errorf("empty organisation name: %w", ErrBadData)
	}
	if len(name) > maxNameBytes {
		return fmt.Errorf("organisation name longer than %d bytes: %w", maxNameBytes, ErrBadData)
	}
	if !utf8.Valid(name) {
		return fmt.Errorf("organisation name is not UTF-8: %w", ErrBadData)
	}
	for _, r := range string(name) {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return fmt.Errorf("control character in organisation name: %w", ErrBadData)
		}
	}
	return nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func (b *builder) finish() (*Registry, error) {
	// The arena copy drops the spare capacity the builder grew into.
	r := &Registry{arena: strings.Clone(b.arena.String()), offs: slices.Clip(b.offs)}
	var err error
	if r.mal, err = sortTable(b.mal, 6); err != nil {
		return nil, err
	}
	if r.mam, err = sortTable(b.mam, 7); err != nil {
		return nil, err
	}
	if r.mas, err = sortTable(b.mas, 9); err != nil {
		return nil, err
	}
	return r, nil
}

// sortTable sorts t in place and refuses a repeated prefix.
func sortTable[K uint32 | uint64](t table[K], digits int) (table[K], error) {
	slices.SortFunc(t, func(a, b entry[K]) int { return cmp.Compare(a.key, b.key) })
	for i := 1; i < len(t); i++ {
		if t[i-1].key == t[i].key {
			return nil, fmt.Errorf("oui: prefix %0*X listed twice: %w", digits, uint64(t[i].key), ErrBadData)
		}
	}
	return slices.Clip(t), nil
}

func (r *Registry) name(id uint32) string {
	return r.arena[r.offs[id]:r.offs[id+1]]
}

// Lookup returns the organisation the address's prefix is assigned to, or
// "" when the registry has no entry, the address is locally administered
// (see Random), or it is shorter than 6 bytes. It tries the 36-bit MA-S
// prefix, then the 28-bit MA-M, then the 24-bit MA-L. EUI-64 addresses
// (8 bytes) are looked up by their first 6 bytes' prefixes too.
func (r *Registry) Lookup(mac net.HardwareAddr) string {
	if r == nil || len(mac) < 6 || Random(mac) {
		return ""
	}
	v := uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
	if id, ok := r.mas.find(v >> 12); ok {
		return r.name(id)
	}
	if id, ok := r.mam.find(uint32(v >> 20)); ok {
		return r.name(id)
	}
	if id, ok := r.mal.find(uint32(v >> 24)); ok {
		return r.name(id)
	}
	return ""
}

// Random reports whether mac is locally administered (bit 0x02 of the
// first octet): randomised "private" addresses of phones and laptops and
// addresses of virtual machines and containers. Such an address has no
// vendor.
func Random(mac net.HardwareAddr) bool {
	return len(mac) > 0 && mac[0]&0x02 != 0
}

// Len is the number of prefixes in the registry (all block sizes).
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.mal) + len(r.mam) + len(r.mas)
}
