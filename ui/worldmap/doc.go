// Package worldmap lays out the traffic map of the web interface: lines
// from the home country to the countries traffic went to, weighted by
// bytes, over a world map drawn once at build time.
//
// # Data
//
// gen/gen.mjs (make worldmap; Node, from the npm packages world-atlas,
// d3-geo, topojson-client and i18n-iso-countries, pinned in
// gen/package.json) writes two files that are committed:
// ../static/world.svg, every country in the Natural Earth 1 projection,
// which the ui serves as a static file; and centroids.json, each
// country's centroid (ISO 3166-1 alpha-2) in the same projection, which
// this package embeds. Nothing is projected at run time and no
// JavaScript runs in the browser.
//
// # Drawing
//
// [Layout] returns the lines as SVG path data in the map's coordinates
// (viewBox 0 0 Width Height): one quadratic curve per country, bowed
// towards the pole so that lines to neighbours stay apart, as wide as
// the square root of its share of the largest country's bytes. Countries
// the centroids do not know are returned in Missing rather than drawn at
// a wrong place.
package worldmap
