package traffic_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jocasta/jocasta/projections/traffic"
)

// An operator's database (location.country_db) is read in each record
// shape of the country databases it may be (the embedded one's
// country_code, GeoLite2-Country's and DB-IP country lite's
// country.iso_code, registered_country.iso_code alone), and one that
// gives no well-known address a country is refused at load, naming the
// file and the shapes understood.
func TestOperatorCountryDatabases(t *testing.T) {
	geolite := func(code string) map[string]any { // GeoLite2-Country's shape
		return map[string]any{
			"continent":          map[string]any{"code": "NA", "geoname_id": uint32(6255149), "names": map[string]any{"en": "North America"}},
			"country":            map[string]any{"geoname_id": uint32(6252001), "iso_code": code, "names": map[string]any{"de": "USA", "en": "United States"}},
			"registered_country": map[string]any{"geoname_id": uint32(6252001), "iso_code": code, "names": map[string]any{"en": "United States"}},
		}
	}
	dbip := func(code string) map[string]any { // DB-IP country lite's shape
		return map[string]any{
			"continent": map[string]any{"code": "OC", "geoname_id": uint32(6255151), "names": map[string]any{"en": "Oceania"}},
			"country": map[string]any{"geoname_id": uint32(2077456), "is_in_european_union": false, "iso_code": code,
				"names": map[string]any{"en": "Australia"}},
		}
	}
	cases := []struct {
		name string
		nets map[string]map[string]any
		want map[string]string // address → country
	}{{
		name: "GeoLite2-Country: country.iso_code",
		nets: map[string]map[string]any{"8.8.8.0/24": geolite("US"), "1.1.1.0/24": geolite("AU"), "2001:4860::/32": geolite("US")},
		want: map[string]string{"8.8.8.8": "US", "1.1.1.1": "AU", "2001:4860:4860::8888": "US", "::ffff:8.8.8.8": "US", "9.9.9.9": "", "10.0.0.1": ""},
	}, {
		name: "DB-IP country lite: country.iso_code beside a boolean",
		nets: map[string]map[string]any{"1.1.1.0/24": dbip("AU"), "80.1.0.0/16": dbip("GB")},
		want: map[string]string{"1.1.1.1": "AU", "80.1.2.3": "GB", "8.8.8.8": ""},
	}, {
		name: "registered_country.iso_code when a record has no country",
		nets: map[string]map[string]any{"9.9.9.0/24": {"registered_country": map[string]any{"iso_code": "CH"}}},
		want: map[string]string{"9.9.9.9": "CH"},
	}, {
		name: "the embedded database's country_code",
		nets: map[string]map[string]any{"8.8.8.0/24": {"country_code": "US"}, "2001:4860::/32": {"country_code": "US"}},
		want: map[string]string{"8.8.8.8": "US", "2001:4860:4860::8888": "US"},
	}, {
		name: "country_code first; a country that is a name (ipinfo) is skipped",
		nets: map[string]map[string]any{
			"8.8.8.0/24":  {"country_code": "US", "country": "United States", "asn": "AS15169"},
			"80.1.0.0/16": {"country_code": "GB", "country": map[string]any{"iso_code": "DE"}},
		},
		want: map[string]string{"8.8.8.8": "US", "80.1.2.3": "GB"},
	}, {
		name: "codes upper-cased; anything but two letters is no country",
		nets: map[string]map[string]any{
			"8.8.8.0/24": {"country": map[string]any{"iso_code": "us"}}, "1.1.1.0/24": {"country_code": "AUS"},
			"9.9.9.0/24": {"country_code": "C1", "registered_country": map[string]any{"iso_code": "CH"}}, "80.1.0.0/16": {"country_code": ""},
		},
		want: map[string]string{"8.8.8.8": "US", "1.1.1.1": "", "9.9.9.9": "CH", "80.1.2.3": ""},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := writeMMDB(t, c.nets)
			db, err := traffic.LoadCountries(file)
			if err != nil {
				t.Fatal(err)
			}
			for ip, want := range c.want {
				if got := db.Country(netip.MustParseAddr(ip)); got != want {
					t.Errorf("%s: %q, want %q", ip, got, want)
				}
			}
		})
	}

	for _, c := range []struct {
		name string
		nets map[string]map[string]any
	}{
		{"an ASN database", map[string]map[string]any{"8.8.8.0/24": {"autonomous_system_number": uint32(15169), "autonomous_system_organization": "GOOGLE"}}},
		{"countries under other names", map[string]map[string]any{"8.8.8.0/24": {"cc": "US", "country": map[string]any{"code": "US"}}}},
		{"no well-known address placed", map[string]map[string]any{"80.1.0.0/16": {"country_code": "GB"}}},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			file := writeMMDB(t, c.nets)
			_, err := traffic.LoadCountries(file)
			if !errors.Is(err, traffic.ErrNoCountries) {
				t.Fatalf("loaded: %v", err)
			}
			for _, s := range []string{file, "country_code", "country.iso_code", "registered_country.iso_code"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}

// writeMMDB writes a MaxMind DB file (format 2.0: IPv6 tree with IPv4 at
// ::/96, 24-bit records) mapping each prefix to its record, and returns
// its path. It is the least the format needs: no pointers, no
// deduplication, prefixes that do not nest.
func writeMMDB(t *testing.T, nets map[string]map[string]any) string {
	t.Helper()
	type node struct {
		kid  [2]*node
		data [2]int // data offset + 1; 0: none
	}
	root := &node{}
	var data []byte
	prefixes := make([]string, 0, len(nets))
	for p := range nets {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	for _, s := range prefixes {
		p := netip.MustParsePrefix(s).Masked()
		var bits [16]byte
		plen := p.Bits()
		if p.Addr().Is4() {
			a := p.Addr().As4()
			copy(bits[12:], a[:])
			plen += 96
		} else {
			bits = p.Addr().As16()
		}
		bit := func(i int) int { return int(bits[i/8]>>(7-i%8)) & 1 }
		n := root
		for i := range plen - 1 {
			if n.kid[bit(i)] == nil {
				n.kid[bit(i)] = &node{}
			}
			n = n.kid[bit(i)]
		}
		n.data[bit(plen-1)] = len(data) + 1
		data = mmdbValue(t, data, nets[s])
	}
	var order []*node
	index := map[*node]int{}
	var walk func(*node)
	walk = func(n *node) {
		index[n] = len(order)
		order = append(order, n)
		for _, k := range n.kid {
			if k != nil {
				walk(k)
			}
		}
	}
	walk(root)
	count := len(order)
	var out []byte
	for _, n := range order {
		for side := range 2 {
			v := count // no data
			switch {
			case n.kid[side] != nil:
				v = index[n.kid[side]]
			case n.data[side] != 0:
				v = count + 16 + n.data[side] - 1
			}
			out = append(out, byte(v>>16), byte(v>>8), byte(v))
		}
	}
	out = append(out, make([]byte, 16)...) // data section separator
	out = append(out, data...)
	out = append(out, "\xab\xcd\xefMaxMind.com"...)
	out = mmdbValue(t, out, map[string]any{
		"node_count": uint32(count), "record_size": uint16(24), "ip_version": uint16(6),
		"database_type": "jocasta-test", "languages": []any{"en"}, "description": map[string]any{"en": "test"},
		"binary_format_major_version": uint16(2), "binary_format_minor_version": uint16(0), "build_epoch": uint64(1_700_000_000),
	})
	file := filepath.Join(t.TempDir(), "country.mmdb")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// mmdbValue appends v in the MaxMind DB data section encoding.
func mmdbValue(t *testing.T, b []byte, v any) []byte {
	appendUint := func(b []byte, typ int, v uint64) []byte {
		var be [8]byte
		binary.BigEndian.PutUint64(be[:], v)
		n := 8
		for n > 0 && be[8-n] == 0 {
			n--
		}
		return append(mmdbControl(b, typ, n), be[8-n:]...)
	}
	switch v := v.(type) {
	case string:
		return append(mmdbControl(b, 2, len(v)), v...)
	case uint16:
		return appendUint(b, 5, uint64(v))
	case uint32:
		return appendUint(b, 6, uint64(v))
	case uint64:
		return appendUint(b, 9, v)
	case bool:
		if v {
			return mmdbControl(b, 14, 1)
		}
		return mmdbControl(b, 14, 0)
	case []any:
		b = mmdbControl(b, 11, len(v))
		for _, e := range v {
			b = mmdbValue(t, b, e)
		}
		return b
	case map[string]any:
		b = mmdbControl(b, 7, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = mmdbValue(t, mmdbValue(t, b, k), v[k])
		}
		return b
	}
	t.Fatalf("mmdbValue: %T is not encoded", v)
	return nil
}

// mmdbControl appends a control byte (type, then size; types past 7 are
// extended: 0 in the byte, the type less 7 in the next).
func mmdbControl(b []byte, typ, size int) []byte {
	c := byte(typ << 5)
	if typ > 7 {
		c = 0
	}
	var extra []byte
	switch {
	case size < 29:
		c |= byte(size)
	case size < 29+256:
		c |= 29
		extra = []byte{byte(size - 29)}
	default:
		c |= 30
		extra = []byte{byte((size - 285) >> 8), byte(size - 285)}
	}
	b = append(b, c)
	if typ > 7 {
		b = append(b, byte(typ-7))
	}
	return append(b, extra...)
}
