# shellcheck shell=bash
# Sourced by scripts/bootstrap-toolchains.sh (its say, die, run_logged, stamp_ok, stamp_write,
# $ROOT, $LOGS).
#
# The crates of the Rust HTTP client adapter's project, conformance/faults/harness/rust/ (the
# fault-matrix runner and the unit tests of runtime/rust/reqwest_adapter.rs): reqwest,
# reqwest-middleware, tokio, uuid and what they pull in, at exactly the versions of its
# Cargo.lock, fetched from crates.io into cargo's own cache ($CARGO_HOME/registry). xtask then
# builds the project with `--locked --offline` in $ROOT/.cache/toolchains/rust-adapter-target.
#
# The same for examples/rust/ (a reqwest + reqwest-middleware SDK with the adapter; its own
# Cargo.lock: those crates plus what reqwest's default, `json`, `form` and `query` features pull
# in), which `cargo xtask runtime-tests --lang rust` builds `--locked --offline` too, and for the
# runtime README's snippet, built from that lock file.
#
# The stamp is the hash of the manifest and the lock file: bumping a version there (and
# regenerating Cargo.lock) fetches again. A second run checks that every locked crate's archive
# is still in cargo's cache, without network.

RUST_ADAPTER_PROJECT="$ROOT/conformance/faults/harness/rust"

# Every registry crate of the lock file as NAME-VERSION.crate, one per line.
rust_adapter_crate_files() {
  awk '
    /^\[\[package\]\]/ { name = ""; version = "" }
    /^name = /         { name = $3 }
    /^version = /      { version = $3 }
    /^source = "registry\+/ { gsub(/"/, "", name); gsub(/"/, "", version); print name "-" version ".crate" }
  ' "$RUST_ADAPTER_PROJECT/Cargo.lock"
}

# Whether cargo's cache holds the archive of every locked crate (no network).
rust_adapter_crates_present() {
  local cache="${CARGO_HOME:-$HOME/.cargo}/registry/cache" dir file missing
  for dir in "$cache"/*/; do
    [[ -d "$dir" ]] || continue
    missing=0
    while IFS= read -r file; do
      if [[ ! -f "$dir$file" ]]; then
        missing=1
        break
      fi
    done < <(rust_adapter_crate_files)
    [[ $missing -eq 0 ]] && return 0
  done
  return 1
}

step_rust_adapter() {
  STEP="rust adapter crates"
  local t0=$EPOCHREALTIME log="$LOGS/$STAMP_NAME.log" action="cached"
  local what="the crates of ${RUST_ADAPTER_PROJECT#"$ROOT/"}/Cargo.lock"
  [[ -f "$RUST_ADAPTER_PROJECT/Cargo.lock" ]] || die "$what" "$RUST_ADAPTER_PROJECT/Cargo.lock is missing"
  local fp
  fp="$(cat "$RUST_ADAPTER_PROJECT/Cargo.toml" "$RUST_ADAPTER_PROJECT/Cargo.lock" | sha256sum | cut -d' ' -f1)"
  if ! stamp_ok "$STAMP_NAME" "$fp" || ! rust_adapter_crates_present; then
    action="fetched"
    run_logged "$log" cargo fetch --locked --manifest-path "$RUST_ADAPTER_PROJECT/Cargo.toml" \
      || die "$what" "cargo fetch --locked failed (crates.io unreachable, or Cargo.lock out of date with Cargo.toml: run cargo update in that folder and commit the lock file)" "$log"
    rust_adapter_crates_present \
      || die "$what" "after cargo fetch, cargo's cache (${CARGO_HOME:-$HOME/.cargo}/registry/cache) lacks a locked crate" "$log"
    stamp_write "$STAMP_NAME" "$fp"
  fi
  say "${RUST_ADAPTER_PROJECT#"$ROOT/"}: $(rust_adapter_crate_files | wc -l) locked crates $action ($(elapsed "$t0"))"
}

RUST_ADAPTER_PROJECT="$ROOT/conformance/faults/harness/rust" STAMP_NAME=rust-adapter step_rust_adapter
RUST_ADAPTER_PROJECT="$ROOT/examples/rust" STAMP_NAME=rust-example step_rust_adapter
