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
#   $CACHE/okhttp5/$OKHTTP5_VERSION/okhttp-jvm-$OKHTTP5_VERSION.jar, okio-jvm-$OKIO5_VERSION.jar
#   $CACHE/okhttp5-classpath     (the same for OkHttp 5: the run kotlin-okhttp5)
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

# OkHttp 5 (what OpenAPI Generator's Kotlin client pins): the JVM artifact is okhttp-jvm, and Okio
# exactly as okhttp-jvm-5.5.1.pom declares it. Its own folder ($CACHE/okhttp5/), its own classpath
# file ($CACHE/okhttp5-classpath): the adapter is tested and run on both lines.
OKHTTP5_VERSION="5.5.1"
OKIO5_VERSION="3.18.1"
OKHTTP5_SHA256="4039527bd1f2e40b66e20b0e52c689cf56074b938ea02678141495f5160f1047"  # okhttp-jvm-5.5.1.jar
OKIO5_SHA256="b97b640557a650d15411f2be29aef558c4e422a83653cb18ba494311dbed18be"    # okio-jvm-3.18.1.jar

# download_okhttp WHAT DIR ARTIFACT VERSION OKIO_VERSION ARTIFACT_SHA256 OKIO_SHA256
download_okhttp() {
  local what="$1" dir="$2" artifact="$3" version="$4" okio="$5" artifact_sum="$6" okio_sum="$7"
  local log="$LOGS/$artifact-$version-maven.log"
  command -v mvn >/dev/null 2>&1 || die "$what" "mvn is not on PATH (needed to download from Maven Central)"
  local parent
  parent="$(dirname "$dir")"
  local stage="$parent/.staging" pomdir="$TMP/$artifact-$version-pom"
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
                <artifactItem><groupId>com.squareup.okhttp3</groupId><artifactId>$artifact</artifactId><version>$version</version></artifactItem>
                <artifactItem><groupId>com.squareup.okio</groupId><artifactId>okio-jvm</artifactId><version>$okio</version></artifactItem>
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
    || die "$what" "Maven could not download $artifact $version and okio-jvm $okio (is Maven Central reachable?)" "$log"
  local jar sum want
  for jar in "$artifact-$version.jar:$artifact_sum" "okio-jvm-$okio.jar:$okio_sum"; do
    want="${jar#*:}" jar="${jar%%:*}"
    [[ -s "$stage/$jar" ]] || die "$what" "Maven finished but $jar is missing" "$log"
    sum="$(sha256sum "$stage/$jar" | awk '{ print $1 }')"
    [[ "$sum" == "$want" ]] \
      || { rm -rf "$stage"; die "$what" "downloaded $jar has sha256 $sum, expected $want (corrupt or tampered download; bump the pin only with the version)"; }
  done
  # Switch over; drop other (older) OkHttp versions.
  local other
  for other in "$parent"/*; do
    [[ -d "$other" && "$other" != "$stage" ]] && rm -rf "$other"
  done
  mv "$stage" "$dir"
}

# install_okhttp STEP CACHE_FOLDER CLASSPATH_FILE ARTIFACT VERSION OKIO_VERSION ARTIFACT_SHA256 OKIO_SHA256
install_okhttp() {
  STEP="$1"
  local folder="$2" cpfile="$3" artifact="$4" version="$5" okio="$6" artifact_sum="$7" okio_sum="$8"
  local t0=$EPOCHREALTIME what="OkHttp $version + Okio $okio (Kotlin adapter)" action="cached"
  local dir="$CACHE/$folder/$version" pins="$artifact_sum $okio_sum"
  # .complete holds the checksums the jars were verified against: a pin bump downloads again.
  if [[ ! -f "$dir/.complete" || "$(cat "$dir/.complete")" != "$pins" \
     || ! -s "$dir/$artifact-$version.jar" || ! -s "$dir/okio-jvm-$okio.jar" ]]; then
    action="installed"
    mkdir -p "$CACHE/$folder"
    download_okhttp "$what" "$dir" "$artifact" "$version" "$okio" "$artifact_sum" "$okio_sum"
    printf '%s' "$pins" >"$dir/.complete"
  fi
  # The physical path, so that a checkout whose .cache is a link (a git worktree) records a
  # classpath that outlives it.
  local real
  real="$(cd "$dir" && pwd -P)"
  local cp="$real/$artifact-$version.jar:$real/okio-jvm-$okio.jar"
  if [[ ! -f "$CACHE/$cpfile" || "$(cat "$CACHE/$cpfile")" != "$cp" ]]; then
    printf '%s\n' "$cp" >"$CACHE/$cpfile"
  fi
  say "kotlin: $artifact $version + okio-jvm $okio $action ($(elapsed "$t0"))"
}

install_okhttp kotlin-okhttp okhttp okhttp-classpath okhttp "$OKHTTP_VERSION" "$OKIO_VERSION" "$OKHTTP_SHA256" "$OKIO_SHA256"
install_okhttp kotlin-okhttp5 okhttp5 okhttp5-classpath okhttp-jvm "$OKHTTP5_VERSION" "$OKIO5_VERSION" "$OKHTTP5_SHA256" "$OKIO5_SHA256"

# install_maven_jars STEP WHAT FOLDER CLASSPATH_FILE GROUP:ARTIFACT:VERSION:SHA256...
# Downloads exactly the jars named (no transitive resolution: the list is what the POMs resolve
# to), each checked against its pin, into $CACHE/FOLDER/, and records their paths joined by ':'
# in $CACHE/CLASSPATH_FILE. Idempotent: a complete folder with the same pins is kept.
install_maven_jars() {
  STEP="$1"
  local what="$2" folder="$3" cpfile="$4"
  shift 4
  local t0=$EPOCHREALTIME action="cached" dir="$CACHE/$folder" pins="$*"
  local entry g a v sum jar jars=() items=""
  for entry in "$@"; do
    IFS=: read -r g a v sum <<<"$entry"
    jars+=("$a-$v.jar")
    items+="<artifactItem><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></artifactItem>"
  done
  local complete=1
  for jar in "${jars[@]}"; do [[ -s "$dir/$jar" ]] || complete=0; done
  if [[ ! -f "$dir/.complete" || "$(cat "$dir/.complete")" != "$pins" || $complete == 0 ]]; then
    action="installed"
    command -v mvn >/dev/null 2>&1 || die "$what" "mvn is not on PATH (needed to download from Maven Central)"
    local key="${folder//\//-}"
    local log="$LOGS/$key-maven.log" stage="$CACHE/.staging-$key" pomdir="$TMP/$key-pom"
    rm -rf "$stage"
    mkdir -p "$stage" "$pomdir" "$(dirname "$dir")"
    cat >"$pomdir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.bootstrap</groupId>
  <artifactId>jars-fetch</artifactId>
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
            <id>jars</id>
            <configuration>
              <outputDirectory>$stage</outputDirectory>
              <artifactItems>$items</artifactItems>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
POM
    run_logged "$log" mvn -B -q -Dstyle.color=never -f "$pomdir/pom.xml" -Dmaven.repo.local="$TMP/m2" \
      "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN_VERSION:copy@jars" \
      || die "$what" "Maven could not download $what (is Maven Central reachable?)" "$log"
    for entry in "$@"; do
      IFS=: read -r g a v sum <<<"$entry"
      jar="$a-$v.jar"
      [[ -s "$stage/$jar" ]] || die "$what" "Maven finished but $jar is missing" "$log"
      [[ "$(sha256sum "$stage/$jar" | awk '{ print $1 }')" == "$sum" ]] \
        || { rm -rf "$stage"; die "$what" "downloaded $jar does not have the pinned sha256 $sum"; }
    done
    rm -rf "$dir"
    mv "$stage" "$dir"
    printf '%s' "$pins" >"$dir/.complete"
  fi
  local real cp=""
  real="$(cd "$dir" && pwd -P)"
  for jar in "${jars[@]}"; do cp+="${cp:+:}$real/$jar"; done
  if [[ ! -f "$CACHE/$cpfile" || "$(cat "$CACHE/$cpfile")" != "$cp" ]]; then
    printf '%s\n' "$cp" >"$CACHE/$cpfile"
  fi
  say "kotlin: $what $action ($(elapsed "$t0"))"
}

# resilience4j-retry 2.4.0 (the most used retry layer of the JVM) for the peer row of the fault
# runner's overhead mode (issue 20 item 7: an OkHttp call wrapped in a Retry, beside the adapter):
# the jars resilience4j-retry 2.4.0 resolves to. $CACHE/resilience4j-classpath is read by xtask.
install_maven_jars kotlin-resilience4j "resilience4j-retry 2.4.0 (bench peer)" resilience4j/2.4.0 resilience4j-classpath \
  "io.github.resilience4j:resilience4j-retry:2.4.0:13cd52c89b69b9dbd68188877f16bdbeb3ae524d351a2d947f31ae07684c420a" \
  "io.github.resilience4j:resilience4j-core:2.4.0:a15d25c4709a4c12432cd0a4f620e37a00a82dbe112f5d1a7a68b31325ffc978" \
  "org.slf4j:slf4j-api:1.7.30:cdba07964d1bb40a0761485c6b1e8c2f8fd9eb1d19c53928ac0d7f9510105c57"

# examples/kotlin: OpenAPI Generator's CLI (the one jar that generates the Kotlin client, version
# of openapi-generator-maven-plugin 7.25.0) and Gson, the serialization library the client is
# generated for (the version the generated build.gradle names). The first path of
# $CACHE/openapi-generator-classpath is the CLI, the second Gson; read by xtask.
install_maven_jars kotlin-openapi-generator "openapi-generator-cli 7.25.0 + gson 2.14.0 (examples/kotlin)" \
  openapi-generator/7.25.0 openapi-generator-classpath \
  "org.openapitools:openapi-generator-cli:7.25.0:41ce4f6b07f196676439d710759fa1ced7a08066d06ff1bf314681470289efae" \
  "com.google.code.gson:gson:2.14.0:2cbd119bf1961c28788310963dc80ba65f58cdeec1dd139c8bdb1240faa2c36f"
