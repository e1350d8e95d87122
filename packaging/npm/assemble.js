#!/usr/bin/env node
// Lays out the npm packages, ready for `npm pack` or `npm publish` (docs/install.md):
//
//   node packaging/npm/assemble.js platform --binary PATH --version V --out DIR [--platform KEY]
//     DIR/KEY: the package that carries one platform's binary (`@capable-mcp/linux-x64-gnu`),
//     with the `os`, `cpu` and `libc` npm installs it for; KEY defaults to this machine's.
//   node packaging/npm/assemble.js main --version V --out DIR
//     DIR/capable: the package users install (`npx capable …`), its launcher and its
//     optional dependencies on every platform package, all at version V.
//
// V is the workspace's version (Cargo.toml), the one `capable --version` prints.
"use strict";

const fs = require("fs");
const path = require("path");
const { platformKeys } = require("./capable/bin/capable.js");

const HERE = __dirname;
const MAIN = path.join(HERE, "capable");

function fail(message) {
  process.stderr.write(`assemble: ${message}\n`);
  process.exit(2);
}

function options(argv) {
  const [mode, ...rest] = argv;
  const opts = { mode };
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, value] = [rest[i], rest[i + 1]];
    if (!flag.startsWith("--") || value === undefined) fail(`expected --FLAG VALUE, got ${flag}`);
    opts[flag.slice(2)] = value;
  }
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(opts.version || "")) fail("--version X.Y.Z is required");
  if (!opts.out) fail("--out DIR is required");
  return opts;
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + "\n");
}

// What npm matches a platform package against: `linux-arm64-musl` → linux, arm64, musl.
function constraints(key) {
  const [os, cpu, libc] = key.split("-");
  const fields = { os: [os], cpu: [cpu] };
  if (os === "linux") fields.libc = [libc === "musl" ? "musl" : "glibc"];
  return fields;
}

function platform(opts, manifest) {
  if (!opts.binary) fail("--binary PATH is required");
  const key = opts.platform || platformKeys()[0];
  if (!key) fail(`no platform key for ${process.platform} ${process.arch}: pass --platform`);
  const name = Object.keys(manifest.optionalDependencies).find((n) => n.endsWith(`/${key}`));
  if (!name) fail(`${key} is none of the optionalDependencies in ${path.join(MAIN, "package.json")}`);
  const dir = path.join(opts.out, key);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(opts.binary, path.join(dir, "bin", "capable"));
  fs.chmodSync(path.join(dir, "bin", "capable"), 0o755);
  writeJson(path.join(dir, "package.json"), {
    name,
    version: opts.version,
    description: `The prebuilt capable binary for ${key}; installed by the \`capable\` package.`,
    license: manifest.license,
    ...constraints(key),
    files: ["bin/capable"],
    preferUnplugged: true,
  });
  fs.writeFileSync(
    path.join(dir, "README.md"),
    `# ${name}\n\nThe \`capable\` binary for ${key}. Install \`capable\` instead: it picks this package on this platform.\n`,
  );
  return dir;
}

function main(opts, manifest) {
  const dir = path.join(opts.out, "capable");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(path.join(MAIN, "bin", "capable.js"), path.join(dir, "bin", "capable.js"));
  fs.chmodSync(path.join(dir, "bin", "capable.js"), 0o755);
  fs.copyFileSync(path.join(MAIN, "README.md"), path.join(dir, "README.md"));
  const optionalDependencies = {};
  for (const name of Object.keys(manifest.optionalDependencies)) optionalDependencies[name] = opts.version;
  writeJson(path.join(dir, "package.json"), { ...manifest, version: opts.version, optionalDependencies });
  return dir;
}

const opts = options(process.argv.slice(2));
const manifest = JSON.parse(fs.readFileSync(path.join(MAIN, "package.json"), "utf8"));
if (opts.mode === "platform") console.log(platform(opts, manifest));
else if (opts.mode === "main") console.log(main(opts, manifest));
else fail("usage: assemble.js platform|main --version V --out DIR [--binary PATH] [--platform KEY]");
