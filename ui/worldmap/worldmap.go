package worldmap

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

//go:embed centroids.json
var centroidsJSON []byte

// Point is a place on the map, in its coordinates.
type Point struct{ X, Y float64 }

type data struct {
	Width     int                   `json:"width"`
	Height    int                   `json:"height"`
	Centroids map[string][2]float64 `json:"centroids"`
}

var loaded = sync.OnceValues(func() (*data, error) {
	var d data
	if err := json.Unmarshal(centroidsJSON, &d); err != nil {
		return nil, fmt.Errorf("worldmap: embedded centroids.json: %w", err)
	}
	if d.Width <= 0 || d.Height <= 0 || len(d.Centroids) == 0 {
		return nil, fmt.Errorf("worldmap: embedded centroids.json is empty (run make worldmap)")
	}
	return &d, nil
})

// Size is the map's width and height (its viewBox), or an error when the
// embedded data is unusable.
func Size() (w, h int, err error) {
	d, err := loaded()
	if err != nil {
		return 0, 0, err
	}
	return d.Width, d.Height, nil
}

// Centroid is where country (ISO 3166-1 alpha-2, any case) is drawn.
func Centroid(country string) (Point, bool) {
	d, err := loaded()
	if err != nil {
		return Point{}, false
	}
	c, ok := d.Centroids[strings.ToUpper(country)]
	return Point{c[0], c[1]}, ok
}

// Flow is traffic between home and one country.
type Flow struct {
	Country string
	Bytes   uint64
	// Title is the line's tooltip.
	Title string
}

// Line is one drawn flow.
type Line struct {
	Flow
	// D is the SVG path data of the curve from home to the country.
	D string
	// Width is the stroke width, from MinWidth to MaxWidth.
	Width string
	// To is the country's centroid.
	To Point
}

// Map is a laid-out traffic map.
type Map struct {
	Width, Height int
	// Home is the home country's centroid; HasHome is false when home is
	// unset or unknown (then nothing is drawn).
	Home    Point
	HasHome bool
	Lines   []Line
	// Missing are the flows' countries with no centroid, and home's own
	// traffic (it has no line).
	Missing []string
}

// Stroke widths of the lines.
const (
	MinWidth = 1.0
	MaxWidth = 9.0
)

// Layout draws flows from home. Flows with no bytes, or to an unknown
// country, are not drawn; flows to home itself are listed in Missing.
// Lines keep the order of flows.
func Layout(home string, flows []Flow) (Map, error) {
	d, err := loaded()
	if err != nil {
		return Map{}, err
	}
	m := Map{Width: d.Width, Height: d.Height}
	m.Home, m.HasHome = Centroid(home)
	var most uint64
	for _, f := range flows {
		most = max(most, f.Bytes)
	}
	for _, f := range flows {
		to, ok := Centroid(f.Country)
		if f.Bytes == 0 {
			continue
		}
		if !ok || !m.HasHome || strings.EqualFold(f.Country, home) {
			m.Missing = append(m.Missing, f.Country)
			continue
		}
		w := MinWidth + (MaxWidth-MinWidth)*math.Sqrt(float64(f.Bytes)/float64(most))
		m.Lines = append(m.Lines, Line{Flow: f, D: curve(m.Home, to), Width: num(w), To: to})
	}
	return m, nil
}

// curve is a quadratic Bézier from a to b whose control point lies off
// the middle of the chord, on the side of the north pole, by a fifth of
// its length.
func curve(a, b Point) string {
	mx, my := (a.X+b.X)/2, (a.Y+b.Y)/2
	dx, dy := b.X-a.X, b.Y-a.Y
	l := math.Hypot(dx, dy)
	// The normal of the chord pointing up (smaller y).
	nx, ny := dy/l, -dx/l
	if ny > 0 || (ny == 0 && nx > 0) {
		nx, ny = -nx, -ny
	}
	k := l / 5
	cx, cy := mx+nx*k, my+ny*k
	return "M" + num(a.X) + "," + num(a.Y) + "Q" + num(cx) + "," + num(cy) + " " + num(b.X) + "," + num(b.Y)
}

func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
