# shellcheck shell=bash
# The packaging tools `cargo xtask dist` uses (docs/distribution.md): maturin builds the wheel
# that carries the retrygen binary (`pip install retrygen`), pre-commit runs the hooks of
# .pre-commit-hooks.yaml on a throwaway repository. Installed into one virtual environment,
# $CACHE/dist, every package pinned, dependencies included, with --no-deps: the tree is exactly
# this list on every machine (`pip check` below fails if a dependency is missing).
#
# Sourced by scripts/bootstrap-toolchains.sh (say, die, run_logged, $CACHE, $LOGS, $STEP).

DIST_PACKAGES=(
  maturin==1.16.0
  packaging==26.4
  pre_commit==4.7.0
  cfgv==3.5.0
  distlib==0.4.4
  filelock==4.3.2
  identify==2.6.20
  nodeenv==1.12.0
  platformdirs==4.14.9
  python-discovery==1.9.9
  PyYAML==6.0.4
  virtualenv==21.15.14
)

step_dist_tools() {
  STEP="dist"
  local t0=$EPOCHREALTIME what="packaging tools (${DIST_PACKAGES[*]})"
  local dir="$CACHE/dist" log="$LOGS/dist.log" action="cached"
  local stamp="$dir/.pinned"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "${DIST_PACKAGES[*]}" ]]; then
    action="installed"
    rm -rf "$dir"
    run_logged "$log" python3 -m venv "$dir" \
      || die "$what" "python3 -m venv failed" "$log"
    run_logged "$log.pip" "$dir/bin/python" -m pip install --disable-pip-version-check \
      --no-input --quiet --no-deps --only-binary=:all: "${DIST_PACKAGES[@]}" \
      || die "$what" "pip install failed (PyPI unreachable, or version missing?)" "$log.pip"
    run_logged "$log.check" "$dir/bin/python" -m pip check \
      || die "$what" "a pinned package lacks a dependency" "$log.check"
    run_logged "$log.check" "$dir/bin/maturin" --version \
      || die "$what" "maturin does not run" "$log.check"
    run_logged "$log.check" "$dir/bin/pre-commit" --version \
      || die "$what" "pre-commit does not run" "$log.check"
    printf '%s' "${DIST_PACKAGES[*]}" >"$stamp"
  fi
  say "dist: maturin and pre-commit $action ($(elapsed "$t0"))"
}

step_dist_tools
