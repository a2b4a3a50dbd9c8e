# shellcheck shell=bash
# Sourced by scripts/bootstrap-toolchains.sh (its say, die, run_logged, stamp_ok, stamp_write,
# $ROOT, $CACHE, $LOGS).
#
# examples/go/ builds a small SDK with oapi-codegen (a `tool` of its go.mod, pinned with its
# dependencies by go.sum) and github.com/oapi-codegen/runtime; the fault runner
# (conformance/faults/harness/go/) measures hashicorp/go-retryablehttp beside the adapter in its
# overhead mode. Both modules' requirements are fetched through the Go module proxy into
# $ROOT/.cache/go-mod (git-ignored), the module cache xtask then uses with GOPROXY=off
# (runtime-tests, faults, bench). The stamp is the hash of the go.mod and go.sum files: changing
# a version fetches again.

GO_MODULE_DIRS=("$ROOT/examples/go" "$ROOT/conformance/faults/harness/go")

step_go_modules() {
  STEP="go modules"
  local t0=$EPOCHREALTIME log="$LOGS/go-modules.log" action="cached"
  local what="the Go modules of examples/go and the fault runner (their go.sum)"
  local cache="$ROOT/.cache/go-mod"
  command -v go >/dev/null || die "$what" "go is not on PATH"
  local dir fp
  fp="$(for dir in "${GO_MODULE_DIRS[@]}"; do cat "$dir/go.mod" "$dir/go.sum"; done | sha256sum | cut -d' ' -f1)"
  if ! stamp_ok go-modules "$fp" || [[ ! -d "$cache" ]]; then
    action="fetched"
    for dir in "${GO_MODULE_DIRS[@]}"; do
      (cd "$dir" \
        && export GOMODCACHE="$cache" GOPROXY=https://proxy.golang.org GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly \
        && run_logged "$log" go mod download all) \
        || die "$what" "go mod download failed in $dir (proxy.golang.org unreachable, or go.sum out of date: run go mod tidy there)" "$log"
    done
    stamp_write go-modules "$fp"
  fi
  say "go modules: oapi-codegen, go-retryablehttp and their requirements $action ($(elapsed "$t0"))"
}

step_go_modules
