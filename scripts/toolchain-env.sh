# shellcheck shell=bash
# Put the toolchains installed by scripts/bootstrap-toolchains.sh on PATH.
#
#   source scripts/toolchain-env.sh          # in the current shell
#   scripts/toolchain-env.sh CMD [ARGS...]   # run one command with that environment
#
# Adds to PATH (front, once):  $ROOT/.cache/toolchains/bin  (tsc, kotlinc, kotlin-run)
#                              $ROOT/.cache/toolchains/node/node_modules/.bin
# Exports:
#   RETRYGEN_TOOLCHAINS       $ROOT/.cache/toolchains
#   RETRYGEN_KOTLIN_CLASSPATH the kotlin-stdlib jar, to run compiled Kotlin:
#                             java -cp "out:$RETRYGEN_KOTLIN_CLASSPATH" MainKt
#   RETRYGEN_TS_TYPEROOTS     the @types folder; a harness outside the cache needs
#                             tsc --typeRoots "$RETRYGEN_TS_TYPEROOTS" --types node
# It does not install anything; run scripts/bootstrap-toolchains.sh first.

__retrygen_env_src="${BASH_SOURCE[0]:-$0}"
RETRYGEN_TOOLCHAINS="$(cd "$(dirname "$__retrygen_env_src")/.." && pwd -P)/.cache/toolchains"
export RETRYGEN_TOOLCHAINS
export RETRYGEN_TS_TYPEROOTS="$RETRYGEN_TOOLCHAINS/node/node_modules/@types"
if [ -f "$RETRYGEN_TOOLCHAINS/kotlin-classpath" ]; then
  RETRYGEN_KOTLIN_CLASSPATH="$(cat "$RETRYGEN_TOOLCHAINS/kotlin-classpath")"
  export RETRYGEN_KOTLIN_CLASSPATH
fi
for __retrygen_dir in "$RETRYGEN_TOOLCHAINS/node/node_modules/.bin" "$RETRYGEN_TOOLCHAINS/bin"; do
  case ":$PATH:" in
    *":$__retrygen_dir:"*) ;;
    *) PATH="$__retrygen_dir:$PATH" ;;
  esac
done
export PATH
unset __retrygen_dir

# Executed rather than sourced: run the given command in this environment.
if [ "$__retrygen_env_src" = "$0" ]; then
  unset __retrygen_env_src
  if [ $# -eq 0 ]; then
    echo "usage: source scripts/toolchain-env.sh   or   scripts/toolchain-env.sh CMD [ARGS...]" >&2
    exit 2
  fi
  exec "$@"
fi
unset __retrygen_env_src
