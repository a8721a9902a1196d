package worldmap

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"
)

func TestCentroidsCoverTheCountriesTheMapNeeds(t *testing.T) {
	w, h, err := Size()
	if err != nil || w != 960 || h < 400 || h > 600 {
		t.Fatalf("size %dx%d %v", w, h, err)
	}
	d, _ := loaded()
	if len(d.Centroids) < 230 {
		t.Errorf("%d centroids, want the 50m file's ~235", len(d.Centroids))
	}
	// Small countries the 110m shapes lack, and ones whose centroid is
	// easily wrong (overseas parts): each must be where the country is.
	tests := []struct {
		code       string
		minX, maxX float64
		minY, maxY float64
	}{
		{"SG", 740, 770, 230, 260}, // south-east Asia, near the equator
		{"HK", 760, 790, 180, 210},
		{"MT", 500, 525, 120, 140},
		{"BH", 600, 630, 160, 185},
		{"MC", 490, 505, 105, 120},
		{"FR", 475, 500, 95, 115},  // metropolitan France, not French Guiana
		{"US", 180, 300, 100, 160}, // the contiguous states, not Alaska
		{"NO", 490, 525, 40, 70},   // mainland, not Svalbard
		{"AU", 760, 860, 260, 330},
		{"de", 495, 515, 80, 100}, // any case
	}
	for _, tt := range tests {
		p, ok := Centroid(tt.code)
		if !ok || p.X < tt.minX || p.X > tt.maxX || p.Y < tt.minY || p.Y > tt.maxY {
			t.Errorf("%s at %+v (%v), want x in [%v,%v], y in [%v,%v]", tt.code, p, ok, tt.minX, tt.maxX, tt.minY, tt.maxY)
		}
	}
	if _, ok := Centroid("XX"); ok {
		t.Error("XX has a centroid")
	}
}

var pathRE = regexp.MustCompile(`^M(-?[\d.]+),(-?[\d.]+)Q(-?[\d.]+),(-?[\d.]+) (-?[\d.]+),(-?[\d.]+)$`)

func TestLayout(t *testing.T) {
	flows := []Flow{
		{Country: "US", Bytes: 4000, Title: "us"},
		{Country: "FR", Bytes: 1000},
		{Country: "DE", Bytes: 500}, // home: no line
		{Country: "XX", Bytes: 10},  // unknown
		{Country: "", Bytes: 10},    // no country
		{Country: "JP", Bytes: 0},   // nothing
	}
	m, err := Layout("DE", flows)
	if err != nil {
		t.Fatal(err)
	}
	de, _ := Centroid("DE")
	if !m.HasHome || m.Home != de || m.Width != 960 {
		t.Fatalf("home %+v %v, width %d", m.Home, m.HasHome, m.Width)
	}
	if len(m.Lines) != 2 || m.Lines[0].Country != "US" || m.Lines[1].Country != "FR" || m.Lines[0].Title != "us" {
		t.Fatalf("lines %+v", m.Lines)
	}
	if got := m.Missing; len(got) != 3 || got[0] != "DE" || got[1] != "XX" || got[2] != "" {
		t.Errorf("missing %q", got)
	}
	// The largest flow is the widest line; a quarter of the bytes is half
	// the extra width (square root).
	if m.Lines[0].Width != "9" || m.Lines[1].Width != "5" {
		t.Errorf("widths %s %s, want 9 and 5", m.Lines[0].Width, m.Lines[1].Width)
	}
	for _, l := range m.Lines {
		g := pathRE.FindStringSubmatch(l.D)
		if g == nil {
			t.Fatalf("path %q", l.D)
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(g[i], 64); return v }
		if f(1) != de.X || f(2) != de.Y || f(5) != l.To.X || f(6) != l.To.Y {
			t.Errorf("%s: %q does not run from home to %+v", l.Country, l.D, l.To)
		}
		// Bowed towards the north: the control point is above the chord.
		if mid := (f(2) + f(6)) / 2; f(4) >= mid {
			t.Errorf("%s: control point y %v not above the chord's middle %v", l.Country, f(4), mid)
		}
	}
	// No home: nothing drawn, everything listed.
	m, err = Layout("", flows[:2])
	if err != nil || m.HasHome || len(m.Lines) != 0 || len(m.Missing) != 2 {
		t.Errorf("no home: %+v %v", m, err)
	}
}

// The committed map is well-formed SVG of the size the centroids use,
// coloured with attributes only (the page's CSP refuses inline style).
func TestWorldSVG(t *testing.T) {
	b, err := os.ReadFile("../static/world.svg")
	if err != nil {
		t.Fatal(err)
	}
	// The Traffic page with its assets stays under 150 KB.
	if len(b) > 60_000 {
		t.Errorf("world.svg is %d bytes, want at most 60,000", len(b))
	}
	if bytes.Contains(b, []byte("style")) || bytes.Contains(b, []byte("<script")) {
		t.Error("world.svg has a style or a script")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	paths := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("world.svg: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "svg":
				for _, a := range se.Attr {
					if w, h, _ := Size(); a.Name.Local == "viewBox" && a.Value != fmt.Sprintf("0 0 %d %d", w, h) {
						t.Errorf("viewBox %q", a.Value)
					}
				}
			case "path":
				paths++
			}
		}
	}
	if paths < 170 {
		t.Errorf("%d paths, want the 177 countries and the sphere", paths)
	}
}
