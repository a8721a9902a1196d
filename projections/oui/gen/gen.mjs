// gen.mjs converts the IEEE OUI registry shipped by the npm package
// oui-data (pinned exactly in package.json) into the compact table that
// the Go package github.com/jocasta/jocasta/projections/oui embeds:
// gzip-compressed UTF-8 lines "PREFIX\tName\n", sorted by PREFIX, where
// PREFIX is 6 (MA-L), 7 (MA-M) or 9 (MA-S) upper-case hex characters and
// Name is the organisation name (the first line of the registry entry,
// whitespace collapsed, control characters removed).
//
// Usage: node gen.mjs OUTPUT.tsv.gz
//
// The output is reproducible: the same oui-data version gives the same
// bytes (sorted input, gzip header without a timestamp).
import { readFileSync, writeFileSync, renameSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, constants } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out || process.argv.length !== 3) {
  console.error("usage: node gen.mjs OUTPUT.tsv.gz");
  process.exit(2);
}

const pkgDir = join(here, "node_modules", "oui-data");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const want = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies["oui-data"];
if (pkg.version !== want) {
  console.error(`gen.mjs: node_modules/oui-data is ${pkg.version}, package.json pins ${want}; run npm install`);
  process.exit(1);
}

const index = JSON.parse(readFileSync(join(pkgDir, "index.json"), "utf8"));
const keyRe = /^(?:[0-9A-F]{6}|[0-9A-F]{7}|[0-9A-F]{9})$/;
const lines = [];
const perLength = { 6: 0, 7: 0, 9: 0 };
for (const [rawKey, value] of Object.entries(index)) {
  const key = rawKey.toUpperCase();
  if (!keyRe.test(key)) {
    console.error(`gen.mjs: unexpected key ${JSON.stringify(rawKey)} in oui-data ${pkg.version}`);
    process.exit(1);
  }
  if (typeof value !== "string") {
    console.error(`gen.mjs: value of ${key} is not a string`);
    process.exit(1);
  }
  const name = value
    .split("\n")[0]
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (name === "") {
    console.error(`gen.mjs: empty organisation name for ${key}`);
    process.exit(1);
  }
  lines.push(`${key}\t${name}\n`);
  perLength[key.length]++;
}
// Each block type must be present; a format change upstream fails loudly
// here instead of shipping an empty table.
if (perLength[6] < 30000 || perLength[7] < 1000 || perLength[9] < 1000) {
  console.error(`gen.mjs: implausible entry counts ${JSON.stringify(perLength)}`);
  process.exit(1);
}
lines.sort();

const gz = gzipSync(Buffer.from(lines.join(""), "utf8"), { level: constants.Z_BEST_COMPRESSION });
mkdirSync(dirname(out), { recursive: true });
const tmp = `${out}.tmp`;
writeFileSync(tmp, gz, { mode: 0o644 });
renameSync(tmp, out);
console.log(
  `gen.mjs: oui-data ${pkg.version}: ${lines.length} prefixes ` +
    `(MA-L ${perLength[6]}, MA-M ${perLength[7]}, MA-S ${perLength[9]}) -> ${out} (${gz.length} bytes)`,
);
