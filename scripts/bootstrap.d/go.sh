# shellcheck shell=bash
# Sourced by scripts/bootstrap-toolchains.sh (its say, die, run_logged, stamp_ok, stamp_write,
# $ROOT, $CACHE, $LOGS).
#
# examples/go/ builds a small SDK with oapi-codegen (a `tool` of its go.mod, pinned with its
# dependencies by go.sum) and github.com/oapi-codegen/runtime. They are fetched through the Go
# module proxy into $ROOT/.cache/go-mod (git-ignored), the module cache `cargo xtask
# runtime-tests --lang go` then uses with GOPROXY=off. The stamp is the hash of go.mod and
# go.sum: changing a version fetches again.

GO_EXAMPLE_DIR="$ROOT/examples/go"

step_go_example() {
  STEP="go example modules"
  local t0=$EPOCHREALTIME log="$LOGS/go-example.log" action="cached"
  local what="the Go example's modules (examples/go/go.sum)"
  local cache="$ROOT/.cache/go-mod"
  command -v go >/dev/null || die "$what" "go is not on PATH"
  local fp
  fp="$(cat "$GO_EXAMPLE_DIR/go.mod" "$GO_EXAMPLE_DIR/go.sum" | sha256sum | cut -d' ' -f1)"
  if ! stamp_ok go-example "$fp" || [[ ! -d "$cache" ]]; then
    action="fetched"
    (cd "$GO_EXAMPLE_DIR" \
      && export GOMODCACHE="$cache" GOPROXY=https://proxy.golang.org GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly \
      && run_logged "$log" go mod download all) \
      || die "$what" "go mod download failed (proxy.golang.org unreachable, or go.sum out of date: run go mod tidy in examples/go)" "$log"
    stamp_write go-example "$fp"
  fi
  say "go example: oapi-codegen and its modules $action ($(elapsed "$t0"))"
}

step_go_example
