#!/usr/bin/env node
// Runs the prebuilt `capable` binary of this platform's package, as if it had been run
// itself: the same arguments, the same stdin, stdout and stderr (inherited, never
// copied), its exit code as ours, the signals sent to us passed on to it, and SIGTERM
// when whoever started us is gone.
//
// npm installs one of this package's optionalDependencies — the one whose `os`, `cpu`
// and `libc` fit the machine — and skips the others; this file finds that one. The
// package names are read from package.json, so the scope is written down once.
"use strict";

const { spawn } = require("child_process");
const os = require("os");
const path = require("path");

// The platform packages' names end in one of these keys (packaging/npm/assemble.js).
function platformKeys() {
  const arch = process.arch;
  if (process.platform === "darwin") return [`darwin-${arch}`];
  if (process.platform !== "linux") return [];
  const libcs = isMusl() ? ["musl", "gnu"] : ["gnu", "musl"];
  return libcs.map((libc) => `linux-${arch}-${libc}`);
}

// glibc's Node reports the glibc it runs on; musl's (Alpine's) reports none.
function isMusl() {
  try {
    if ("excludeNetwork" in process.report) process.report.excludeNetwork = true;
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return false;
  }
}

// The binary of the first platform package that is installed, or why there is none.
function findBinary() {
  const manifest = require("../package.json");
  const names = Object.keys(manifest.optionalDependencies || {});
  const wanted = [];
  for (const key of platformKeys()) {
    const name = names.find((n) => n.endsWith(`/${key}`));
    if (!name) continue;
    wanted.push(name);
    try {
      const dir = path.dirname(require.resolve(`${name}/package.json`));
      return { binary: path.join(dir, "bin", "capable") };
    } catch {
      // Not installed: try the next key.
    }
  }
  const here = `${process.platform} ${process.arch}`;
  if (wanted.length === 0) {
    return { error: `capable: no prebuilt binary for ${here}; build it with \`cargo install capable-cli\`` };
  }
  return {
    error:
      `capable: the package with the binary for ${here} (${wanted[0]}) is not installed; ` +
      "it is an optional dependency: install again without --omit=optional / --no-optional",
  };
}

// SIGINT from a terminal reaches the binary too (same process group); passing it on
// as well is harmless: capable takes a second signal as the first while it stops.
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR2", "SIGWINCH"];

function main() {
  const found = findBinary();
  if (found.error) {
    process.stderr.write(found.error + "\n");
    return process.exit(1);
  }
  const child = spawn(found.binary, process.argv.slice(2), { stdio: "inherit" });
  const relays = FORWARDED.map((signal) => {
    const relay = () => {
      try {
        child.kill(signal);
      } catch {
        // Already gone: its exit is on its way.
      }
    };
    process.on(signal, relay);
    return [signal, relay];
  });
  // Whoever started us may die of a signal without passing it on: `npx` runs us under
  // `sh -c`, and npm's SIGTERM ends that shell, not us. Then we are reparented, and
  // the binary is told as if it were the signal (a bridge must not outlive its host).
  const parent = process.ppid;
  const orphaned = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(orphaned);
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
  }, 200);
  orphaned.unref();
  child.on("error", (err) => {
    process.stderr.write(`capable: cannot run ${found.binary}: ${err.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      // Killed by a signal it did not handle: die of the same one, so whoever started
      // us sees what happened (not a made-up exit code).
      for (const [name, relay] of relays) process.off(name, relay);
      process.kill(process.pid, signal);
      // One Node does not die of (it ignores it): the shell's convention instead.
      setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 1000);
      return;
    }
    process.exit(code);
  });
}

if (require.main === module) main();

module.exports = { platformKeys };
