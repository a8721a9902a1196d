// gen.mjs draws the web interface's world map once, at build time, so
// that no JavaScript runs in the browser and nothing comes from a CDN:
//
//   - WORLD.svg: every country of world-atlas countries-110m.json
//     (Natural Earth 1:110m, public domain) in the Natural Earth 1
//     projection, 960 units wide, on the integer grid in relative
//     coordinates (about 44 KB: the page and its assets stay under the
//     150 KB budget), coloured with presentation attributes only (the
//     page's CSP forbids inline style). The web interface
//     serves it as a static file and draws it under the traffic arcs.
//   - CENTROIDS.json: {"width", "height", "centroids": {alpha-2: [x, y]}}
//     in the same projection, from countries-50m.json (the 110m file
//     lacks small countries such as SG, HK, MT, BH and MC). A country's
//     centroid is that of its largest polygon, so that France is in
//     Europe and the United States between its coasts. world-atlas ids
//     are ISO 3166-1 numeric; i18n-iso-countries maps them to the
//     alpha-2 codes of the IP → country database.
//
// Usage: node gen.mjs WORLD.svg CENTROIDS.json
//
// The output is reproducible: the same package versions (pinned exactly
// in package.json) give the same bytes.
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { geoNaturalEarth1, geoPath, geoArea, geoCentroid } from "d3-geo";
import { feature } from "topojson-client";
import countries from "i18n-iso-countries";

const here = dirname(fileURLToPath(import.meta.url));
if (process.argv.length !== 4) {
  console.error("usage: node gen.mjs WORLD.svg CENTROIDS.json");
  process.exit(2);
}
const [svgOut, centroidsOut] = process.argv.slice(2);

// The installed packages must be the pinned ones.
const pins = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies;
for (const [name, want] of Object.entries(pins)) {
  const got = JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8")).version;
  if (got !== want) {
    console.error(`gen.mjs: node_modules/${name} is ${got}, package.json pins ${want}; run npm install`);
    process.exit(1);
  }
}

const atlas = (f) => JSON.parse(readFileSync(join(here, "node_modules", "world-atlas", f), "utf8"));
const shapes = feature(atlas("countries-110m.json"), "countries").features;
const detail = feature(atlas("countries-50m.json"), "countries").features;

const width = 960;
const sphere = { type: "Sphere" };
const projection = geoNaturalEarth1().fitWidth(width, sphere);
const path = geoPath(projection).digits(0);
const [[, y0], [, y1]] = path.bounds(sphere);
const height = Math.ceil(y1 - y0);

// compact rewrites a path of d3's absolute M/L/Z commands on the integer
// grid as relative lines, dropping the points rounding made repeat: about
// half the bytes of the absolute form.
const compact = (d) => {
  let out = "", cx = 0, cy = 0, inL = false;
  const sep = (n) => (n < 0 ? "" : " ") + n;
  for (const [, cmd, args] of d.matchAll(/([MLZ])([^MLZ]*)/g)) {
    if (cmd === "Z") { out += "z"; inL = false; continue; }
    const [x, y] = args.split(",").map(Number);
    if (cmd === "M") { out += `M${x}${sep(y)}`; [cx, cy] = [x, y]; inL = false; continue; }
    const [dx, dy] = [x - cx, y - cy];
    if (dx === 0 && dy === 0) continue;
    out += (inL ? sep(dx) : "l" + dx) + sep(dy);
    [cx, cy] = [x, y];
    inL = true;
  }
  return out;
};

// The map: the sphere as the sea's outline, then every country. Paths
// are sorted by id so the file does not depend on the input's order.
const land = shapes
  .map((f) => ({ id: String(f.id ?? ""), d: path(f) && compact(path(f)) }))
  .filter((x) => x.d)
  .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.d < b.d ? -1 : 1));
let svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">\n`;
svg += `<path d="${compact(path(sphere))}" fill="#7f8c99" fill-opacity="0.08" stroke="#7f8c99" stroke-opacity="0.4" stroke-width="0.6"/>\n`;
svg += `<g fill="#7f8c99" fill-opacity="0.42" stroke="#ffffff" stroke-opacity="0.55" stroke-width="0.4" stroke-linejoin="round">\n`;
for (const x of land) svg += `<path d="${x.d}"/>\n`;
svg += `</g>\n</svg>\n`;

// Centroids of the largest polygon of each country.
const centroids = {};
for (const f of detail) {
  if (f.id === undefined) continue; // disputed areas with no ISO code
  const a2 = countries.numericToAlpha2(String(f.id).padStart(3, "0"));
  if (!a2) continue;
  let g = f.geometry;
  if (g.type === "MultiPolygon") {
    let best = null, area = -1;
    for (const coords of g.coordinates) {
      const p = { type: "Polygon", coordinates: coords };
      const ar = geoArea(p);
      if (ar > area) [best, area] = [p, ar];
    }
    g = best;
  }
  const xy = projection(geoCentroid(g));
  if (!xy || !Number.isFinite(xy[0]) || !Number.isFinite(xy[1])) continue;
  centroids[a2] = [Math.round(xy[0] * 10) / 10, Math.round(xy[1] * 10) / 10];
}
const sorted = Object.fromEntries(Object.keys(centroids).sort().map((k) => [k, centroids[k]]));

const write = (file, text) => {
  writeFileSync(file + ".tmp", text, { mode: 0o644 });
  renameSync(file + ".tmp", file);
};
write(svgOut, svg);
write(centroidsOut, JSON.stringify({ width, height, centroids: sorted }) + "\n");
console.log(`gen.mjs: ${land.length} country shapes (${svg.length} bytes), ${Object.keys(sorted).length} centroids, ${width}x${height}`);
