package traffic

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"

	"github.com/oschwald/maxminddb-golang/v2"
)

//go:embed data
var dataFS embed.FS

const dataFile = "data/country.mmdb.gz"

// ErrNoCountryData says the binary was built without the embedded
// country database (see data/README.md): peers have no country.
var ErrNoCountryData = errors.New("traffic: country database not embedded (run the generator in projections/traffic/gen, see projections/traffic/data/README.md)")

// Countries looks up the country of an address in a MaxMind-format
// database with a country_code field. The zero value knows nothing.
type Countries struct {
	db *maxminddb.Reader
}

// LoadCountries opens path, or the embedded database when path is "".
// On ErrNoCountryData it still returns a usable (empty) Countries.
func LoadCountries(path string) (*Countries, error) {
	var b []byte
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return &Countries{}, fmt.Errorf("traffic: country database: %w", err)
		}
	} else {
		gz, err := dataFS.ReadFile(dataFile)
		if errors.Is(err, fs.ErrNotExist) {
			return &Countries{}, ErrNoCountryData
		}
		if err != nil {
			return &Countries{}, fmt.Errorf("traffic: embedded %s: %w", dataFile, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return &Countries{}, fmt.Errorf("traffic: embedded %s: %w", dataFile, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return &Countries{}, fmt.Errorf("traffic: embedded %s: %w", dataFile, err)
		}
	}
	db, err := maxminddb.OpenBytes(b)
	if err != nil {
		return &Countries{}, fmt.Errorf("traffic: country database %q: %w", path, err)
	}
	return &Countries{db: db}, nil
}

// Country is the ISO 3166-1 alpha-2 code of ip, "" when unknown or for
// an address that is not globally routed (private, loopback, link-local,
// CGNAT, ULA).
func (c *Countries) Country(ip netip.Addr) string {
	ip = ip.Unmap()
	if c == nil || c.db == nil || !Public(ip) {
		return ""
	}
	var rec struct {
		CountryCode string `maxminddb:"country_code"`
	}
	if err := c.db.Lookup(ip).Decode(&rec); err != nil || len(rec.CountryCode) != 2 {
		return ""
	}
	return rec.CountryCode
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public reports whether ip is a globally routed unicast address.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip)
}
