#!/usr/bin/env bash
# Install (idempotently) the non-preinstalled toolchains that retrygen's
# generated-code checks need, into the git-ignored $ROOT/.cache/toolchains:
#
#   * TypeScript compiler (npm: typescript, pinned 5.x) + @types/node (Node 20)
#   * Kotlin compiler (Maven Central: kotlin-compiler-embeddable) + wrappers
#   * ktlint, the Kotlin linter/formatter (Maven Central: ktlint-cli fat jar) + wrapper
#   * C# compiler + runtime (Debian: mono-mcs, mono-runtime; system-wide via apt)
#
# and check that the preinstalled ones exist: go, gofmt, python3, cargo,
# rustfmt, cargo clippy, node, java.
#
# Usage:
#   scripts/bootstrap-toolchains.sh [--verify] [--versions] [--quiet]
#     --verify    re-run the compile/run smoke tests even if already verified
#     --versions  print the version of every toolchain at the end
#     --quiet     print nothing unless something fails
#   then:  source scripts/toolchain-env.sh   (or: scripts/toolchain-env.sh CMD ARGS...)
#
# A second run with everything present does no network access and takes well
# under a second. Any failure names the toolchain and the reason, and exits
# non-zero.
set -Eeuo pipefail

# ---- pinned versions (bump here; a bump reinstalls on the next run) --------
TYPESCRIPT_VERSION="5.9.3"        # stay on 5.x: typescript@7 is the native (Go) port
TYPES_NODE_VERSION="20.19.43"     # matches the preinstalled Node 20
PRETTIER_VERSION="3.10.1"         # the TypeScript formatter the generated module must satisfy
PYTHON_TOOLS=(black==26.10.1 ruff==0.17.6 mypy==1.20.2)   # mypy 2.x refuses --python-version 3.9
KOTLIN_VERSION="2.4.21"
MAVEN_DEPENDENCY_PLUGIN_VERSION="3.8.1"
KTLINT_VERSION="1.8.0"            # the generated Kotlin module must pass ktlint with no finding
KTLINT_SHA1="e6eb21468a7d321c436b7b191bb2cf5ed4585489"   # of ktlint-cli-$KTLINT_VERSION-all.jar
KTLINT_SHA256="369ad2b789f95a011f807e1fcb690ccef80bd7cd014fd139e73ae82dcc0baeab"
APT_CSHARP_PACKAGES=(mono-mcs mono-runtime libmono-corlib4.5-cil libmono-system4.0-cil libmono-system-core4.0-cil)
MONO_LIB_DIR="/usr/lib/mono/4.5"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
# The cache's real path (a checkout may link .cache to a shared one): recorded classpaths must
# not depend on which checkout ran the bootstrap.
mkdir -p "$ROOT/.cache/toolchains"
CACHE="$(cd "$ROOT/.cache/toolchains" && pwd -P)"
BIN="$CACHE/bin"
LOGS="$CACHE/logs"
STAMPS="$CACHE/stamps"

VERIFY=0 VERSIONS=0 QUIET=0
for arg in "$@"; do
  case "$arg" in
    --verify) VERIFY=1 ;;
    --versions) VERSIONS=1 ;;
    -q|--quiet) QUIET=1 ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bootstrap-toolchains: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

STEP="setup"
TMP=""
cleanup() { if [[ -n "$TMP" && -d "$TMP" ]]; then rm -rf "$TMP"; fi; }
trap cleanup EXIT
# shellcheck disable=SC2154  # rc is assigned inside the trap string
trap 'rc=$?; echo "bootstrap-toolchains: ERROR: step \"$STEP\" failed unexpectedly (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

say() { if [[ $QUIET -eq 0 ]]; then echo "bootstrap-toolchains: $*" >&2; fi; }

# die TOOLCHAIN REASON [LOGFILE]: explain which toolchain failed and why.
die() {
  local what="$1" why="$2" log="${3:-}"
  {
    echo "bootstrap-toolchains: ERROR: could not install/verify $what: $why"
    if [[ -n "$log" && -s "$log" ]]; then
      echo "---- last lines of $log ----"
      tail -n 40 "$log" | sed 's/\x1b\[[0-9;]*m//g'
      echo "----"
    fi
  } >&2
  exit 1
}

# run_logged LOGFILE CMD...: run quietly, output to LOGFILE; returns CMD's status.
run_logged() {
  local log="$1"; shift
  { echo "+ $*"; "$@"; } >"$log" 2>&1
}

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2fs", b - a }'; }

mkdir -p "$CACHE" "$BIN" "$LOGS" "$STAMPS"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/bootstrap-toolchains.XXXXXX")"

# One bootstrap at a time (parallel CI jobs, two shells, ...).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

# stamp_ok NAME FINGERPRINT: was NAME verified with exactly this fingerprint?
stamp_ok() { [[ $VERIFY -eq 0 && -f "$STAMPS/$1" && "$(cat "$STAMPS/$1")" == "$2" ]]; }
stamp_write() { printf '%s' "$2" >"$STAMPS/$1"; }

java_fingerprint() { java -version 2>&1 | tr '\n' ' '; }

# =============================================================================
# 1. Preinstalled toolchains: only check.
# =============================================================================
step_preinstalled() {
  STEP="preinstalled toolchains"
  local t0=$EPOCHREALTIME missing=()
  local tool
  for tool in go gofmt python3 cargo rustfmt node java; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if command -v cargo >/dev/null 2>&1; then
    (cd "$ROOT" && cargo clippy --version) >"$LOGS/clippy.log" 2>&1 || missing+=("cargo clippy (see $LOGS/clippy.log)")
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    local m
    for m in "${missing[@]}"; do
      echo "bootstrap-toolchains: ERROR: required toolchain missing: $m (it must be preinstalled on this machine; this script does not install it)" >&2
    done
    exit 1
  fi
  say "preinstalled: go gofmt python3 cargo rustfmt clippy node java present ($(elapsed "$t0"))"
}

# =============================================================================
# 2. TypeScript (npm) -> $CACHE/node, $BIN/tsc
# =============================================================================
installed_npm_version() { # PACKAGE -> version from node_modules, or empty
  local pj="$CACHE/node/node_modules/$1/package.json"
  [[ -f "$pj" ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null || true
}

step_typescript() {
  STEP="typescript"
  local t0=$EPOCHREALTIME what="TypeScript (tsc $TYPESCRIPT_VERSION, @types/node $TYPES_NODE_VERSION)"
  local log="$LOGS/typescript.log" action="cached"
  if [[ "$(installed_npm_version typescript)" != "$TYPESCRIPT_VERSION" \
     || "$(installed_npm_version @types/node)" != "$TYPES_NODE_VERSION" \
     || "$(installed_npm_version prettier)" != "$PRETTIER_VERSION" ]]; then
    action="installed"
    command -v npm >/dev/null 2>&1 || die "$what" "npm is not on PATH (needed to install from the npm registry)"
    mkdir -p "$CACHE/node"
    [[ -f "$CACHE/node/package.json" ]] || echo '{ "private": true }' >"$CACHE/node/package.json"
    # --prefer-offline: exact pins + integrity hashes, so npm's own cache is fine to reuse.
    run_logged "$log" npm install --prefix "$CACHE/node" --no-audit --no-fund --save-exact --prefer-offline \
      "typescript@$TYPESCRIPT_VERSION" "@types/node@$TYPES_NODE_VERSION" "prettier@$PRETTIER_VERSION" \
      || die "$what" "npm install failed (npm registry unreachable, or version missing?)" "$log"
    [[ "$(installed_npm_version typescript)" == "$TYPESCRIPT_VERSION" ]] \
      || die "$what" "after npm install, node_modules/typescript is not version $TYPESCRIPT_VERSION" "$log"
    [[ "$(installed_npm_version @types/node)" == "$TYPES_NODE_VERSION" ]] \
      || die "$what" "after npm install, node_modules/@types/node is not version $TYPES_NODE_VERSION" "$log"
  fi
  ln -sfn ../node/node_modules/typescript/bin/tsc "$BIN/tsc"

  local fp
  fp="ts=$TYPESCRIPT_VERSION types=$TYPES_NODE_VERSION node=$(node --version)"
  if ! stamp_ok typescript "$fp"; then
    action="$action+verified"
    local d="$TMP/ts" slog="$LOGS/typescript-smoke.log"
    mkdir -p "$d"
    cat >"$d/main.ts" <<'EOF'
import { readFileSync } from "node:fs";
enum Mode { Fixed = "fixed", Exponential = "exponential" }
interface Policy { readonly name: string; readonly maxAttempts: number; readonly mode: Mode }
const lines: string[] = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.length > 0);
const policies: Policy[] = lines.map((l) => {
  const [name, attempts, mode] = l.split(",");
  return { name, maxAttempts: Number(attempts), mode: mode as Mode };
});
console.log(`${policies.length} ${policies[0].name} ${policies[0].maxAttempts} ${policies[0].mode}`);
EOF
    printf 'a,3,fixed\nb,5,exponential\n' >"$d/in.txt"
    # The harness lives outside the cache, so @types/node must be named explicitly.
    run_logged "$slog" "$BIN/tsc" --strict --noEmitOnError --target es2022 --module commonjs \
      --typeRoots "$CACHE/node/node_modules/@types" --types node --outDir "$d/out" "$d/main.ts" \
      || die "$what" "smoke test: tsc failed to compile a strict file using node:fs" "$slog"
    local out
    out="$(node "$d/out/main.js" "$d/in.txt" 2>>"$slog")" || die "$what" "smoke test: node could not run the compiled output" "$slog"
    [[ "$out" == "2 a 3 fixed" ]] || die "$what" "smoke test: unexpected output '$out'" "$slog"
    stamp_write typescript "$fp"
  fi
  say "typescript: tsc $TYPESCRIPT_VERSION + @types/node $TYPES_NODE_VERSION $action ($(elapsed "$t0"))"
}

# =============================================================================
# 3. Kotlin (Maven Central) -> $CACHE/kotlin/$KOTLIN_VERSION, $BIN/kotlinc, $BIN/kotlin-run
# =============================================================================
KDIR="$CACHE/kotlin/$KOTLIN_VERSION"

write_kotlin_wrappers() {
  # Wrappers locate the cache relative to themselves; nothing absolute baked in.
  cat >"$BIN/kotlinc" <<EOF
#!/usr/bin/env bash
# kotlinc wrapper generated by scripts/bootstrap-toolchains.sh (Kotlin $KOTLIN_VERSION).
# Env: KOTLINC_JAVA_OPTS overrides the JVM options (default: -XX:TieredStopAtLevel=1).
set -euo pipefail
here="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd -P)"
k="\$here/kotlin/$KOTLIN_VERSION"
java="\${JAVA_HOME:+\$JAVA_HOME/bin/}java"
# shellcheck disable=SC2206
opts=(\${KOTLINC_JAVA_OPTS:--XX:TieredStopAtLevel=1})
# Class-data-sharing archive made at bootstrap: halves start-up. If it does not
# match this JVM/classpath the JVM silently ignores it.
if [[ -f "\$k/kotlinc.jsa" ]]; then
  opts+=(-XX:SharedArchiveFile="\$k/kotlinc.jsa" -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off)
fi
exec "\$java" "\${opts[@]}" -cp "\$(cat "\$k/compiler-classpath")" \\
  org.jetbrains.kotlin.cli.jvm.K2JVMCompiler -kotlin-home "\$k/home" "\$@"
EOF
  cat >"$BIN/kotlin-run" <<EOF
#!/usr/bin/env bash
# Run compiled Kotlin with the stdlib on the classpath (Kotlin $KOTLIN_VERSION).
# Usage: kotlin-run [-cp DIR_OR_JAR[:...]] MainClassKt [args...]   (default -cp .)
set -euo pipefail
here="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd -P)"
cp="."
if [[ \$# -ge 2 && ( "\$1" == "-cp" || "\$1" == "-classpath" ) ]]; then cp="\$2"; shift 2; fi
if [[ \$# -lt 1 ]]; then echo "usage: kotlin-run [-cp PATH] MainClassKt [args...]" >&2; exit 2; fi
java="\${JAVA_HOME:+\$JAVA_HOME/bin/}java"
exec "\$java" -cp "\$cp:\$here/kotlin/$KOTLIN_VERSION/home/lib/kotlin-stdlib.jar" "\$@"
EOF
  chmod +x "$BIN/kotlinc" "$BIN/kotlin-run"
}

download_kotlin() {
  local what="$1" log="$LOGS/kotlin-maven.log"
  command -v mvn >/dev/null 2>&1 || die "$what" "mvn is not on PATH (needed to download from Maven Central)"
  local stage="$CACHE/kotlin/.staging" pomdir="$TMP/kotlin-pom"
  rm -rf "$stage"
  mkdir -p "$stage/lib" "$stage/home/lib" "$pomdir"
  cat >"$pomdir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.bootstrap</groupId>
  <artifactId>kotlinc-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.jetbrains.kotlin</groupId>
      <artifactId>kotlin-compiler-embeddable</artifactId>
      <version>$KOTLIN_VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$MAVEN_DEPENDENCY_PLUGIN_VERSION</version>
        <executions>
          <execution>
            <!-- the compiler and its runtime dependencies -->
            <id>compiler</id>
            <configuration>
              <includeScope>runtime</includeScope>
              <outputDirectory>$stage/lib</outputDirectory>
            </configuration>
          </execution>
          <execution>
            <!-- a "Kotlin home" (lib/kotlin-stdlib.jar, ...) for -kotlin-home -->
            <id>home</id>
            <configuration>
              <outputDirectory>$stage/home/lib</outputDirectory>
              <stripVersion>true</stripVersion>
              <artifactItems>
                <artifactItem><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-stdlib</artifactId><version>$KOTLIN_VERSION</version></artifactItem>
                <artifactItem><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-script-runtime</artifactId><version>$KOTLIN_VERSION</version></artifactItem>
                <artifactItem><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-reflect</artifactId><version>$KOTLIN_VERSION</version></artifactItem>
              </artifactItems>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
  local plugin="org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN_VERSION"
  # A throw-away local repository keeps ~/.m2 untouched and the cache small.
  run_logged "$log" mvn -B -q -Dstyle.color=never -f "$pomdir/pom.xml" \
    -Dmaven.repo.local="$TMP/m2" \
    "$plugin:copy-dependencies@compiler" "$plugin:copy@home" \
    || die "$what" "Maven could not download kotlin-compiler-embeddable $KOTLIN_VERSION and its dependencies (is Maven Central reachable?)" "$log"
  local j
  for j in "lib/kotlin-compiler-embeddable-$KOTLIN_VERSION.jar" "lib/kotlin-stdlib-$KOTLIN_VERSION.jar" \
           home/lib/kotlin-stdlib.jar home/lib/kotlin-script-runtime.jar home/lib/kotlin-reflect.jar; do
    [[ -s "$stage/$j" ]] || die "$what" "Maven finished but $j is missing" "$log"
  done
  # Switch over atomically-ish; drop other (older) Kotlin versions.
  local other
  for other in "$CACHE"/kotlin/*; do
    [[ -d "$other" && "$other" != "$stage" ]] && rm -rf "$other"
  done
  mv "$stage" "$KDIR"
  touch "$KDIR/.complete"
}

step_kotlin() {
  STEP="kotlin"
  local t0=$EPOCHREALTIME what="Kotlin compiler $KOTLIN_VERSION" action="cached"
  if [[ ! -f "$KDIR/.complete" ]]; then
    action="installed"
    download_kotlin "$what"
  fi
  # Classpath files are (re)written every run: cheap, and correct if the repo moved.
  local cp="" j
  for j in "$KDIR"/lib/*.jar; do cp+="${cp:+:}$j"; done
  [[ -n "$cp" ]] || die "$what" "no jars in $KDIR/lib (delete $KDIR and re-run)"
  if [[ ! -f "$KDIR/compiler-classpath" || "$(cat "$KDIR/compiler-classpath")" != "$cp" ]]; then
    printf '%s' "$cp" >"$KDIR/compiler-classpath"
    rm -f "$KDIR/kotlinc.jsa"   # CDS archive is tied to the exact classpath
  fi
  printf '%s\n' "$KDIR/home/lib/kotlin-stdlib.jar" >"$CACHE/kotlin-classpath"
  write_kotlin_wrappers

  local fp
  fp="kotlin=$KOTLIN_VERSION cp=$cp java=$(java_fingerprint)"
  if ! stamp_ok kotlin "$fp" || [[ ! -f "$KDIR/kotlinc.jsa" ]]; then
    action="$action+verified"
    local d="$TMP/kt" slog="$LOGS/kotlin-smoke.log"
    mkdir -p "$d"
    cat >"$d/Main.kt" <<'EOF'
import java.io.File

enum class Mode { FIXED, EXPONENTIAL }

data class Policy(val name: String, val maxAttempts: Int, val mode: Mode)

object Registry {
    private val items = linkedMapOf<String, Policy>()
    fun add(p: Policy) { items[p.name] = p }
    fun all(): List<Policy> = items.values.toList()
}

fun main(args: Array<String>) {
    for (line in File(args[0]).readLines().filter { it.isNotBlank() }) {
        val (name, attempts, mode) = line.split(",")
        Registry.add(Policy(name, attempts.toInt(), Mode.valueOf(mode)))
    }
    val first = Registry.all().first()
    println("${Registry.all().size} ${first.copy(maxAttempts = 9)}")
}
EOF
    printf 'a,3,FIXED\nb,5,EXPONENTIAL\n' >"$d/in.txt"
    # (a) compile with the raw JVM command, recording a class-data-sharing archive.
    rm -f "$KDIR/kotlinc.jsa" "$KDIR/kotlinc.jsa.tmp"
    run_logged "$slog" java -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit="$KDIR/kotlinc.jsa.tmp" \
      -Xlog:cds=off -Xlog:cds+dynamic=off -cp "$cp" org.jetbrains.kotlin.cli.jvm.K2JVMCompiler \
      -kotlin-home "$KDIR/home" -Werror -d "$d/out0" "$d/Main.kt" \
      || die "$what" "smoke test: compiling a small Kotlin file failed" "$slog"
    if [[ -s "$KDIR/kotlinc.jsa.tmp" ]]; then
      mv "$KDIR/kotlinc.jsa.tmp" "$KDIR/kotlinc.jsa"
    else
      rm -f "$KDIR/kotlinc.jsa.tmp"
      say "kotlin: note: could not create a class-data-sharing archive; kotlinc works but starts slower"
    fi
    # (b) compile again through the wrapper: must succeed and print nothing (-Werror).
    local out
    out="$("$BIN/kotlinc" -Werror -d "$d/out" "$d/Main.kt" 2>&1)" \
      || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: the kotlinc wrapper failed" "$slog"; }
    [[ -z "$out" ]] || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: the kotlinc wrapper printed diagnostics" "$slog"; }
    out="$("$BIN/kotlin-run" -cp "$d/out" MainKt "$d/in.txt" 2>&1)" \
      || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: running the compiled Kotlin failed" "$slog"; }
    [[ "$out" == "2 Policy(name=a, maxAttempts=9, mode=FIXED)" ]] \
      || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: unexpected output '$out'" "$slog"; }
    out="$(java -cp "$d/out:$(cat "$CACHE/kotlin-classpath")" MainKt "$d/in.txt" 2>&1)" \
      || die "$what" "smoke test: java -cp out:\$(cat kotlin-classpath) MainKt failed: $out"
    stamp_write kotlin "$fp"
  fi
  say "kotlin: kotlinc $KOTLIN_VERSION $action ($(elapsed "$t0"))"
}

# =============================================================================
# 3b. ktlint (Maven Central: ktlint-cli fat jar) -> $CACHE/ktlint/$KTLINT_VERSION, $BIN/ktlint
# =============================================================================
KTDIR="$CACHE/ktlint/$KTLINT_VERSION"
KTLINT_JAR="ktlint-cli-$KTLINT_VERSION-all.jar"
KTLINT_URL="https://repo.maven.apache.org/maven2/com/pinterest/ktlint/ktlint-cli/$KTLINT_VERSION/$KTLINT_JAR"

write_ktlint_wrapper() {
  # Located relative to itself like the kotlinc wrapper; nothing absolute baked in.
  cat >"$BIN/ktlint" <<EOF
#!/usr/bin/env bash
# ktlint wrapper generated by scripts/bootstrap-toolchains.sh (ktlint $KTLINT_VERSION).
# Env: KTLINT_JAVA_OPTS overrides the JVM options (default: -XX:TieredStopAtLevel=1).
set -euo pipefail
here="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd -P)"
k="\$here/ktlint/$KTLINT_VERSION"
java="\${JAVA_HOME:+\$JAVA_HOME/bin/}java"
# shellcheck disable=SC2206
opts=(\${KTLINT_JAVA_OPTS:--XX:TieredStopAtLevel=1})
# Class-data-sharing archive made at bootstrap; the JVM ignores it if it does not match.
if [[ -f "\$k/ktlint.jsa" ]]; then
  opts+=(-XX:SharedArchiveFile="\$k/ktlint.jsa" -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off)
fi
exec "\$java" "\${opts[@]}" -jar "\$k/$KTLINT_JAR" "\$@"
EOF
  chmod +x "$BIN/ktlint"
}

# sha_of ALGO FILE: the hex digest (ALGO 1 or 256).
sha_of() { "sha$1sum" "$2" | awk '{ print $1 }'; }

download_ktlint() {
  local what="$1" log="$LOGS/ktlint-download.log"
  command -v curl >/dev/null 2>&1 || die "$what" "curl is not on PATH (needed to download from Maven Central)"
  command -v sha1sum >/dev/null 2>&1 && command -v sha256sum >/dev/null 2>&1 \
    || die "$what" "sha1sum/sha256sum are not on PATH (needed to verify the download)"
  local stage="$CACHE/ktlint/.staging"
  rm -rf "$stage"
  mkdir -p "$stage"
  : >"$log"
  run_logged "$log" curl -fsSL --retry 3 --connect-timeout 20 -o "$stage/$KTLINT_JAR" "$KTLINT_URL" \
    || die "$what" "download of $KTLINT_URL failed (is Maven Central reachable?)" "$log"
  run_logged "$log.sha1" curl -fsSL --retry 3 --connect-timeout 20 -o "$stage/$KTLINT_JAR.sha1" "$KTLINT_URL.sha1" \
    || die "$what" "download of $KTLINT_URL.sha1 failed (is Maven Central reachable?)" "$log.sha1"
  local published actual1 actual256
  published="$(tr -d ' \r\n' <"$stage/$KTLINT_JAR.sha1" | cut -c1-40)"
  [[ "$published" == "$KTLINT_SHA1" ]] \
    || { rm -rf "$stage"; die "$what" "Maven Central publishes sha1 '$published' for $KTLINT_JAR, but this script pins $KTLINT_SHA1 (bump KTLINT_SHA1/KTLINT_SHA256 only together with KTLINT_VERSION)"; }
  actual1="$(sha_of 1 "$stage/$KTLINT_JAR")"
  [[ "$actual1" == "$KTLINT_SHA1" ]] \
    || { rm -rf "$stage"; die "$what" "downloaded $KTLINT_JAR has sha1 $actual1, expected $KTLINT_SHA1 (corrupt or tampered download)"; }
  actual256="$(sha_of 256 "$stage/$KTLINT_JAR")"
  [[ "$actual256" == "$KTLINT_SHA256" ]] \
    || { rm -rf "$stage"; die "$what" "downloaded $KTLINT_JAR has sha256 $actual256, expected $KTLINT_SHA256 (corrupt or tampered download)"; }
  # Switch over; drop other (older) ktlint versions.
  local other
  for other in "$CACHE"/ktlint/*; do
    [[ -d "$other" && "$other" != "$stage" ]] && rm -rf "$other"
  done
  mv "$stage" "$KTDIR"
  printf '%s' "$KTLINT_SHA256" >"$KTDIR/.complete"
}

step_ktlint() {
  STEP="ktlint"
  local t0=$EPOCHREALTIME what="ktlint $KTLINT_VERSION" action="cached"
  # .complete holds the sha256 the jar was verified against at download: a pin bump re-downloads.
  if [[ ! -f "$KTDIR/.complete" || "$(cat "$KTDIR/.complete")" != "$KTLINT_SHA256" || ! -s "$KTDIR/$KTLINT_JAR" ]]; then
    action="installed"
    download_ktlint "$what"
  fi
  write_ktlint_wrapper

  local fp
  fp="ktlint=$KTLINT_VERSION sha256=$KTLINT_SHA256 java=$(java_fingerprint)"
  if ! stamp_ok ktlint "$fp" || [[ ! -f "$KTDIR/ktlint.jsa" ]]; then
    action="$action+verified"
    local d="$TMP/ktlint" slog="$LOGS/ktlint-smoke.log"
    mkdir -p "$d/good" "$d/bad"
    printf 'root = true\n\n[*.{kt,kts}]\nktlint_code_style = ktlint_official\n' >"$d/.editorconfig"
    cat >"$d/good/Good.kt" <<'EOF'
package smoke

/** A policy. */
public data class Policy(
    val name: String,
    val maxAttempts: Int,
)

/** Sums the attempts. */
public fun total(policies: List<Policy>): Int = policies.sumOf { it.maxAttempts }
EOF
    printf 'package smoke\nfun  bad( ) : Int { return 1 ;}\n' >"$d/bad/Bad.kt"
    # (a) the clean file passes, recording a class-data-sharing archive (halves start-up).
    rm -f "$KTDIR/ktlint.jsa" "$KTDIR/ktlint.jsa.tmp"
    run_logged "$slog" java -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit="$KTDIR/ktlint.jsa.tmp" \
      -Xlog:cds=off -Xlog:cds+dynamic=off -jar "$KTDIR/$KTLINT_JAR" --relative "$d/good/Good.kt" \
      || die "$what" "smoke test: ktlint reported findings on a clean file (or did not run)" "$slog"
    if [[ -s "$KTDIR/ktlint.jsa.tmp" ]]; then
      mv "$KTDIR/ktlint.jsa.tmp" "$KTDIR/ktlint.jsa"
    else
      rm -f "$KTDIR/ktlint.jsa.tmp"
      say "ktlint: note: could not create a class-data-sharing archive; ktlint works but starts slower"
    fi
    # (b) through the wrapper: the version, and findings (exit 1) on a badly formatted file.
    local out
    out="$("$BIN/ktlint" --version 2>&1)" \
      || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: the ktlint wrapper failed to print its version" "$slog"; }
    [[ "$out" == *"$KTLINT_VERSION"* ]] \
      || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: ktlint --version printed '$out', expected $KTLINT_VERSION" "$slog"; }
    local rc=0
    out="$(cd "$d" && "$BIN/ktlint" --relative bad/Bad.kt 2>&1)" || rc=$?
    printf '%s\n' "$out" >>"$slog"
    [[ $rc -eq 1 && "$out" == *"bad/Bad.kt:2:"* ]] \
      || die "$what" "smoke test: ktlint did not report the badly formatted file (exit $rc)" "$slog"
    stamp_write ktlint "$fp"
  fi
  say "ktlint: ktlint $KTLINT_VERSION $action ($(elapsed "$t0"))"
}

# =============================================================================
# 4. C# (Debian mono) -> system-wide via apt-get
# =============================================================================
csharp_present() {
  command -v mcs >/dev/null 2>&1 && command -v mono >/dev/null 2>&1 \
    && [[ -f "$MONO_LIB_DIR/mscorlib.dll" && -f "$MONO_LIB_DIR/System.dll" && -f "$MONO_LIB_DIR/System.Core.dll" ]]
}

step_csharp() {
  STEP="csharp"
  local t0=$EPOCHREALTIME what="C# compiler (Debian mono-mcs + mono-runtime)" action="present"
  if ! csharp_present; then
    action="installed"
    local log="$LOGS/csharp-apt.log" sudo=()
    command -v apt-get >/dev/null 2>&1 || die "$what" "mcs/mono are missing and apt-get is not available"
    if [[ $(id -u) -ne 0 ]]; then
      command -v sudo >/dev/null 2>&1 || die "$what" "mcs/mono are missing and installing them with apt-get needs root (no sudo available)"
      sudo=(sudo -n)
    fi
    : >"$log"
    run_logged "$log.update" "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q \
      || die "$what" "apt-get update failed" "$log.update"
    run_logged "$log" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
      install -y -q --no-install-recommends "${APT_CSHARP_PACKAGES[@]}" \
      || die "$what" "apt-get install ${APT_CSHARP_PACKAGES[*]} failed" "$log"
    csharp_present || die "$what" "apt-get succeeded but mcs, mono or $MONO_LIB_DIR/{mscorlib,System,System.Core}.dll is still missing" "$log"
  fi

  local fp
  fp="mcs=$(mcs --version 2>&1) mono=$(mono --version 2>&1 | head -n 1)"
  if ! stamp_ok csharp "$fp"; then
    action="$action+verified"
    local d="$TMP/cs" slog="$LOGS/csharp-smoke.log"
    mkdir -p "$d"
    cat >"$d/Main.cs" <<'EOF'
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;

namespace Smoke
{
    public enum Mode { Fixed, Exponential }

    public sealed class Policy
    {
        public readonly string Name;
        public readonly int MaxAttempts;
        public readonly Mode Mode;

        public Policy(string name, int maxAttempts, Mode mode)
        {
            Name = name;
            MaxAttempts = maxAttempts;
            Mode = mode;
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            var attempts = new Dictionary<string, int>();
            var policies = new List<Policy>();
            foreach (var line in File.ReadAllLines(args[0]).Where(l => l.Length > 0))
            {
                var parts = line.Split(',');
                var p = new Policy(parts[0], int.Parse(parts[1]), (Mode)Enum.Parse(typeof(Mode), parts[2]));
                policies.Add(p);
                attempts[p.Name] = p.MaxAttempts;
            }
            Console.WriteLine($"{policies.Count} {attempts.Values.Sum()} {policies[0].Mode}");
            return 0;
        }
    }
}
EOF
    printf 'a,3,Fixed\nb,5,Exponential\n' >"$d/in.txt"
    # NB: mcs 6.8 accepts -langversion up to 7.2 (7.3 is rejected with CS1617).
    run_logged "$slog" mcs -langversion:7.2 -warnaserror+ -r:System.Core.dll -out:"$d/main.exe" "$d/Main.cs" \
      || die "$what" "smoke test: mcs failed to compile a small C# file" "$slog"
    local out
    out="$(mono "$d/main.exe" "$d/in.txt" 2>&1)" || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: mono could not run the compiled exe" "$slog"; }
    [[ "$out" == "2 8 Fixed" ]] || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: unexpected output '$out'" "$slog"; }
    stamp_write csharp "$fp"
  fi
  say "csharp: mcs/mono $action ($(elapsed "$t0"))"
}

# =============================================================================
# 5. Python formatter and linters -> $CACHE/python (run as python3 -m X with PYTHONPATH)
# =============================================================================
step_python_tools() {
  STEP="python-tools"
  local t0=$EPOCHREALTIME what="Python tools (${PYTHON_TOOLS[*]})"
  local log="$LOGS/python-tools.log" action="cached" stamp="$CACHE/python/.pinned"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "${PYTHON_TOOLS[*]}" ]]; then
    action="installed"
    # pip --target does not replace an older tree cleanly: start from an empty folder.
    rm -rf "$CACHE/python"
    run_logged "$log" python3 -m pip install --disable-pip-version-check --no-input --quiet \
      --target "$CACHE/python" "${PYTHON_TOOLS[@]}" \
      || die "$what" "pip install failed (PyPI unreachable, or version missing?)" "$log"
    local tool
    for tool in black ruff mypy; do
      PYTHONPATH="$CACHE/python" run_logged "$log" python3 -m "$tool" --version \
        || die "$what" "after pip install, python3 -m $tool does not run" "$log"
    done
    printf '%s' "${PYTHON_TOOLS[*]}" >"$stamp"
  fi
  say "python tools: ${PYTHON_TOOLS[*]} $action ($(elapsed "$t0"))"
}

print_versions() {
  STEP="versions"
  echo "tsc:     $("$BIN/tsc" --version)"
  echo "kotlinc: $("$BIN/kotlinc" -version 2>&1 | head -n 1)"
  echo "ktlint:  $("$BIN/ktlint" --version 2>&1 | head -n 1)"
  echo "mcs:     $(mcs --version)"
  echo "mono:    $(mono --version | head -n 1)"
  echo "node:    $(node --version)"
  echo "java:    $(java -version 2>&1 | head -n 1)"
  echo "go:      $(go version)"
  echo "python3: $(python3 --version 2>&1)"
  echo "cargo:   $(cargo --version)"
  echo "rustfmt: $(rustfmt --version)"
  echo "clippy:  $(cd "$ROOT" && cargo clippy --version)"
}

T_ALL=$EPOCHREALTIME
step_preinstalled
step_typescript
step_kotlin
step_ktlint
step_csharp
step_python_tools
# What each language's HTTP client adapter needs (httpx, OkHttp, reqwest...): one file per
# language in scripts/bootstrap.d/, sourced here so it shares say/die/run_logged and the stamps.
for adapter_step in "$ROOT"/scripts/bootstrap.d/*.sh; do
  [[ -e "$adapter_step" ]] || continue
  # shellcheck disable=SC1090
  source "$adapter_step"
done
STEP="done"
say "all toolchains ready in $(elapsed "$T_ALL"); use: source scripts/toolchain-env.sh"
if [[ $VERSIONS -eq 1 ]]; then print_versions; fi
