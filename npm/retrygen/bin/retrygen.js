#!/usr/bin/env node
"use strict";
// `npx retrygen ...` and package.json scripts: runs this platform's binary with the same
// arguments, standard streams and exit status.

const { spawnSync } = require("node:child_process");
const { binaryPath } = require("../index.js");

/** @type {string} */
let binary;
try {
  binary = binaryPath();
} catch (error) {
  console.error(
    `retrygen: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(2);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  console.error(`retrygen: cannot run ${binary}: ${result.error.message}`);
  process.exit(2);
}
if (result.signal) {
  // Die of the same signal, so `make` and shells see what happened to the binary.
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 2);
