# shellcheck shell=bash
# The fetch adapter's fault runner (conformance/faults/harness/typescript/) speaks h2c, HTTP/1.1
# over TLS and HTTP/2 over TLS through Node's own fetch with a dispatcher of the npm `undici`
# package: an `Agent` with `connect: {ca}` trusts exactly the test CA (Node's fetch offers no other
# way short of NODE_EXTRA_CA_CERTS, which adds to the system roots), `allowH2: true` lets ALPN pick
# HTTP/2, and `H2CClient` (undici 7) speaks HTTP/2 with prior knowledge. Node's fetch has no public
# constructor for any of them. Installed with `npm install --prefix`
# into $CACHE/node-undici, beside (not inside) the pinned tools of $CACHE/node, and linked into the
# runner's folder by xtask/src/toolchains/typescript.rs. undici has no dependencies.
#
# undici 7, not the 6.x Node 20 bundles: over HTTP/2 the Agent of undici 6 (6.24.1 as bundled,
# 6.29.1 alike) never settles the next request to an origin whose connection was reset (the
# matrix's reset scenarios hang), undici 7's recovers. It still takes the dispatcher handlers
# (API version 1) Node 20's fetch passes. It needs Node >= 20.18.1.
#
# Sourced by scripts/bootstrap-toolchains.sh (say, die, run_logged, $CACHE, $LOGS, $STEP).

TYPESCRIPT_UNDICI_VERSION="7.30.3"

step_typescript_undici() {
  STEP="typescript-undici"
  local t0=$EPOCHREALTIME what="undici $TYPESCRIPT_UNDICI_VERSION for the TypeScript fault runner"
  local dir="$CACHE/node-undici" log="$LOGS/typescript-undici.log" action="cached"
  local pj="$dir/node_modules/undici/package.json" installed=""
  if [[ -f "$pj" ]]; then
    installed="$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null || true)"
  fi
  if [[ "$installed" != "$TYPESCRIPT_UNDICI_VERSION" ]]; then
    action="installed"
    command -v npm >/dev/null 2>&1 || die "$what" "npm is not on PATH (needed to install from the npm registry)"
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || echo '{ "private": true }' >"$dir/package.json"
    run_logged "$log" npm install --prefix "$dir" --no-audit --no-fund --save-exact --prefer-offline \
      "undici@$TYPESCRIPT_UNDICI_VERSION" \
      || die "$what" "npm install failed (npm registry unreachable, or version missing?)" "$log"
    # The dispatchers the runner builds: a CA of its own with HTTP/2 allowed, and h2c.
    run_logged "$log.check" node -e '
      const { Agent, H2CClient } = require(process.argv[1]);
      const agent = new Agent({ connect: { ca: "" }, allowH2: true });
      const h2c = new Agent({ factory: (origin, options) => new H2CClient(origin, options) });
      if (typeof agent.dispatch !== "function" || typeof h2c.dispatch !== "function") process.exit(1);
      agent.close();
      h2c.close();' "$dir/node_modules/undici" \
      || die "$what" "after npm install, undici's Agent cannot be built" "$log.check"
  fi
  say "typescript undici: $TYPESCRIPT_UNDICI_VERSION $action ($(elapsed "$t0"))"
}

step_typescript_undici
