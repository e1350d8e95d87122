// Prints the outcome of every check the conformance runner wrote under DIR (its `-o`),
// one line each: `SCENARIO@SPEC<TAB>CHECK-ID<TAB>STATUS`, sorted, without repeats.
// Usage: node server-checks.mjs DIR SPEC   (SPEC is `-` for a run without one)
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const [dir, spec] = process.argv.slice(2);
const lines = new Set();
for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
  // `server-NAME-2026-12-06T07-30-18-565Z`: the scenario's name between the two.
  const scenario = entry.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
  const file = join(dir, entry, "checks.json");
  if (!existsSync(file)) continue;
  const tag = spec === "-" ? scenario : `${scenario}@${spec}`;
  for (const check of JSON.parse(readFileSync(file, "utf8"))) {
    lines.add(`${tag}\t${check.id}\t${check.status}`);
  }
}
process.stdout.write([...lines].sort().map((l) => l + "\n").join(""));
