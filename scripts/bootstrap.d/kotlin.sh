# shellcheck shell=bash
# Sourced by scripts/bootstrap-toolchains.sh (its say, die, run_logged, $CACHE, $LOGS, $TMP).
#
# OkHttp for the Kotlin HTTP client adapter (runtime/kotlin/RetryInterceptor.kt): the runtime
# tests compile and unit-test the adapter against it, and the fault matrix's Kotlin runner
# (conformance/faults/harness/kotlin/) runs on it. Installs the two jars, nothing transitive:
#
#   $CACHE/okhttp/$OKHTTP_VERSION/okhttp-$OKHTTP_VERSION.jar
#   $CACHE/okhttp/$OKHTTP_VERSION/okio-jvm-$OKIO_VERSION.jar
#   $CACHE/okhttp-classpath      (the two paths joined by ':', read by xtask)
#
# OkHttp's own dependencies are Okio and the Kotlin stdlib; the stdlib is the compiler's (Kotlin
# 2.x), which runs code compiled for 1.8/1.9, so the older kotlin-stdlib-jdk7/jdk8 jars OkHttp's
# POM names are left out (they would put two stdlib versions on one classpath).

# OkHttp 4.12.x, the 4.x line (OkHttp 5 is another API and package layout); Okio exactly as
# okhttp-4.12.1.pom declares it.
OKHTTP_VERSION="4.12.1"
OKIO_VERSION="3.6.0"
OKHTTP_SHA256="86706f20171c58167b4acca46a66a4039d6b7927543b5ed944b7311c3cb52de0"   # okhttp-4.12.1.jar
OKIO_SHA256="67543f0736fc422ae927ed0e504b98bc5e269fda0d3500579337cb713da28412"     # okio-jvm-3.6.0.jar

download_okhttp() {
  local what="$1" dir="$2" log="$LOGS/okhttp-maven.log"
  command -v mvn >/dev/null 2>&1 || die "$what" "mvn is not on PATH (needed to download from Maven Central)"
  local stage="$CACHE/okhttp/.staging" pomdir="$TMP/okhttp-pom"
  rm -rf "$stage"
  mkdir -p "$stage" "$pomdir"
  cat >"$pomdir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.bootstrap</groupId>
  <artifactId>okhttp-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$MAVEN_DEPENDENCY_PLUGIN_VERSION</version>
        <executions>
          <execution>
            <id>okhttp</id>
            <configuration>
              <outputDirectory>$stage</outputDirectory>
              <artifactItems>
                <artifactItem><groupId>com.squareup.okhttp3</groupId><artifactId>okhttp</artifactId><version>$OKHTTP_VERSION</version></artifactItem>
                <artifactItem><groupId>com.squareup.okio</groupId><artifactId>okio-jvm</artifactId><version>$OKIO_VERSION</version></artifactItem>
              </artifactItems>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
  # A throw-away local repository keeps ~/.m2 untouched, as for the compiler.
  run_logged "$log" mvn -B -q -Dstyle.color=never -f "$pomdir/pom.xml" -Dmaven.repo.local="$TMP/m2" \
    "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN_VERSION:copy@okhttp" \
    || die "$what" "Maven could not download okhttp $OKHTTP_VERSION and okio-jvm $OKIO_VERSION (is Maven Central reachable?)" "$log"
  local jar sum want
  for jar in "okhttp-$OKHTTP_VERSION.jar:$OKHTTP_SHA256" "okio-jvm-$OKIO_VERSION.jar:$OKIO_SHA256"; do
    want="${jar#*:}" jar="${jar%%:*}"
    [[ -s "$stage/$jar" ]] || die "$what" "Maven finished but $jar is missing" "$log"
    sum="$(sha256sum "$stage/$jar" | awk '{ print $1 }')"
    [[ "$sum" == "$want" ]] \
      || { rm -rf "$stage"; die "$what" "downloaded $jar has sha256 $sum, expected $want (corrupt or tampered download; bump the pin only with the version)"; }
  done
  # Switch over; drop other (older) OkHttp versions.
  local other
  for other in "$CACHE"/okhttp/*; do
    [[ -d "$other" && "$other" != "$stage" ]] && rm -rf "$other"
  done
  mv "$stage" "$dir"
}

step_kotlin_okhttp() {
  STEP="kotlin-okhttp"
  local t0=$EPOCHREALTIME what="OkHttp $OKHTTP_VERSION + Okio $OKIO_VERSION (Kotlin adapter)" action="cached"
  local dir="$CACHE/okhttp/$OKHTTP_VERSION" pins="$OKHTTP_SHA256 $OKIO_SHA256"
  # .complete holds the checksums the jars were verified against: a pin bump downloads again.
  if [[ ! -f "$dir/.complete" || "$(cat "$dir/.complete")" != "$pins" \
     || ! -s "$dir/okhttp-$OKHTTP_VERSION.jar" || ! -s "$dir/okio-jvm-$OKIO_VERSION.jar" ]]; then
    action="installed"
    download_okhttp "$what" "$dir"
    printf '%s' "$pins" >"$dir/.complete"
  fi
  # The physical path, so that a checkout whose .cache is a link (a git worktree) records a
  # classpath that outlives it.
  local real
  real="$(cd "$dir" && pwd -P)"
  local cp="$real/okhttp-$OKHTTP_VERSION.jar:$real/okio-jvm-$OKIO_VERSION.jar"
  if [[ ! -f "$CACHE/okhttp-classpath" || "$(cat "$CACHE/okhttp-classpath")" != "$cp" ]]; then
    printf '%s\n' "$cp" >"$CACHE/okhttp-classpath"
  fi
  say "kotlin: okhttp $OKHTTP_VERSION + okio-jvm $OKIO_VERSION $action ($(elapsed "$t0"))"
}

step_kotlin_okhttp
