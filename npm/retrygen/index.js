"use strict";
// Where this platform's retrygen binary is. The binary ships in one optional dependency per
// platform (the way esbuild and biome ship theirs): npm installs only the one whose `os`, `cpu`
// and `libc` match, so an install downloads one binary and runs no install script.

const path = require("node:path");

/** @type {Record<string, string>} platform key -> package */
const PACKAGES = {
  "darwin arm64": "@retrygen/cli-darwin-arm64",
  "darwin x64": "@retrygen/cli-darwin-x64",
  "linux arm64 glibc": "@retrygen/cli-linux-arm64-gnu",
  "linux x64 glibc": "@retrygen/cli-linux-x64-gnu",
  "linux x64 musl": "@retrygen/cli-linux-x64-musl",
  "win32 x64": "@retrygen/cli-win32-x64",
};

/** The C library on Linux: glibc reports its version in the process report, musl does not. */
function linuxLibc() {
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } }} */ (
    process.report.getReport()
  );
  return report.header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** The key of this platform in PACKAGES. */
function platformKey() {
  const key = `${process.platform} ${process.arch}`;
  return process.platform === "linux" ? `${key} ${linuxLibc()}` : key;
}

/**
 * The absolute path of the retrygen binary: RETRYGEN_BINARY when set (a binary built with
 * `cargo install retrygen`, say), else the one in this platform's package.
 * @returns {string}
 */
function binaryPath() {
  const override = process.env.RETRYGEN_BINARY;
  if (override) {
    return path.resolve(override);
  }
  const key = platformKey();
  const pkg = PACKAGES[key];
  if (!pkg) {
    throw new Error(
      `retrygen ships no binary for ${key}; install it with \`cargo install retrygen\` and set RETRYGEN_BINARY to its path`,
    );
  }
  const file = process.platform === "win32" ? "retrygen.exe" : "retrygen";
  try {
    return require.resolve(`${pkg}/bin/${file}`);
  } catch {
    throw new Error(
      `retrygen's binary package ${pkg} is not installed: it is an optional dependency, so an install with --omit=optional or --no-optional skips it; reinstall without that flag`,
    );
  }
}

module.exports = { binaryPath, platformKey };
