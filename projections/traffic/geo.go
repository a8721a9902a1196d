package traffic

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/oschwald/maxminddb-golang/v2"
)

// embeddedCountryDB is the embedded country database, a MaxMind DB file
// as it is: country_data.go, written by the generator (gen/gen.mjs, `make
// country`) beside data/country.mmdb and not committed, sets it. Empty
// when the binary was built without them.
var embeddedCountryDB string

// ErrNoCountryData says the binary was built without the embedded
// country database (see data/README.md): peers have no country.
var ErrNoCountryData = errors.New("traffic: country database not embedded (run the generator in projections/traffic/gen, see projections/traffic/data/README.md)")

// ErrNoCountries is returned (wrapped, with the file's name) by
// LoadCountries for an operator's database that loads but gives no
// country for any of a few public resolvers' addresses: a database of another kind (ASN, city
// without countries) or of a record shape Country does not read.
var ErrNoCountries = errors.New("no country for any of 8.8.8.8, 1.1.1.1, 9.9.9.9, 2001:4860:4860::8888; " +
	"a record must hold its ISO 3166-1 alpha-2 code as country_code (ip-location-db, ipinfo), " +
	"country.iso_code (GeoLite2-Country, GeoIP2, DB-IP country lite) or registered_country.iso_code")

// wellKnown are public resolvers' addresses that every country database
// places: a file that gives none of them a country is refused at load.
var wellKnown = []netip.Addr{
	netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("1.1.1.1"),
	netip.MustParseAddr("9.9.9.9"), netip.MustParseAddr("2001:4860:4860::8888"),
}

// Countries looks up the country of an address in a MaxMind-format
// database: a record's top-level country_code (the embedded database,
// ip-location-db, ipinfo), else its country.iso_code (GeoLite2-Country,
// GeoIP2, DB-IP country lite), else its registered_country.iso_code
// (those databases' records without a country, such as some anycast
// ranges). The zero value knows nothing.
type Countries struct {
	db *maxminddb.Reader
}

// countryRecord is the part of a record Country reads, in every shape
// it understands.
type countryRecord struct {
	CountryCode string `maxminddb:"country_code"`
	Country     struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	Registered struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
}

// countryPaths are the record's code fields in order of preference, read
// one at a time when the record does not decode as a countryRecord (a
// field of another type, such as ipinfo's country, a name).
var countryPaths = [][]any{{"country_code"}, {"country", "iso_code"}, {"registered_country", "iso_code"}}

// LoadCountries opens path, or the embedded database when path is "".
// On ErrNoCountryData it still returns a usable (empty) Countries.
//
// The embedded database is read in place, in the binary's read-only
// data: it takes no heap, and only the pages lookups go through are
// read in (mapped from the executable, which the kernel can drop and
// read again). An operator's file is read into the heap rather than
// mapped: a mapped file rewritten in place (cp over it) would crash the
// process at its next lookup, and a copy made at start cannot change.
func LoadCountries(path string) (*Countries, error) {
	var b []byte
	switch {
	case path != "":
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return &Countries{}, fmt.Errorf("traffic: country database: %w", err)
		}
	case embeddedCountryDB == "":
		return &Countries{}, ErrNoCountryData
	default:
		// maxminddb only reads its buffer (OpenBytes: "callers must not
		// modify it"), so the string's bytes are safe to hand it as
		// they are, without the 5 MB copy []byte(s) would make.
		b = unsafe.Slice(unsafe.StringData(embeddedCountryDB), len(embeddedCountryDB))
	}
	db, err := maxminddb.OpenBytes(b)
	if err != nil {
		if path == "" {
			return &Countries{}, fmt.Errorf("traffic: embedded country database: %w", err)
		}
		return &Countries{}, fmt.Errorf("traffic: country database %q: %w", path, err)
	}
	c := &Countries{db: db}
	if path != "" && !slices.ContainsFunc(wellKnown, func(ip netip.Addr) bool { return c.Country(ip) != "" }) {
		return &Countries{}, fmt.Errorf("traffic: country database %q: %w", path, ErrNoCountries)
	}
	return c, nil
}

// Country is the ISO 3166-1 alpha-2 code of ip, "" when unknown or for
// an address that is not globally routed (private, loopback, link-local,
// CGNAT, ULA).
func (c *Countries) Country(ip netip.Addr) string {
	ip = ip.Unmap()
	if c == nil || c.db == nil || !Public(ip) {
		return ""
	}
	res := c.db.Lookup(ip)
	var rec countryRecord
	if err := res.Decode(&rec); err == nil {
		for _, code := range [...]string{rec.CountryCode, rec.Country.ISOCode, rec.Registered.ISOCode} {
			if code, ok := isoCode(code); ok {
				return code
			}
		}
		return ""
	}
	for _, path := range countryPaths {
		var code string
		if res.DecodePath(&code, path...) == nil {
			if code, ok := isoCode(code); ok {
				return code
			}
		}
	}
	return ""
}

// isoCode is s as an upper-case ISO 3166-1 alpha-2 code, if it is two
// ASCII letters.
func isoCode(s string) (string, bool) {
	if len(s) != 2 || !isLetter(s[0]) || !isLetter(s[1]) {
		return "", false
	}
	if s[0] >= 'a' || s[1] >= 'a' {
		s = strings.ToUpper(s)
	}
	return s, true
}

func isLetter(c byte) bool { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public reports whether ip is a globally routed unicast address.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip)
}
