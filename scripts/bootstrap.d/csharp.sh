# shellcheck shell=bash
# C#'s HTTP client adapter (runtime/csharp/RetryHandler.cs) compiles against System.Net.Http.dll,
# which Debian ships apart from mono's core (libmono-system-net-http4.0-cil). Sourced by
# scripts/bootstrap-toolchains.sh after its C# step (mono is there); uses its say/die/run_logged,
# stamp_ok/stamp_write and $LOGS $STAMPS $TMP.
#
# The package is pinned to the exact version of the installed mono-runtime: Debian builds every
# libmono-* package of one mono release together, and the assembly must match the runtime.

csharp_http_present() {
  [[ -f "$MONO_LIB_DIR/System.Net.Http.dll" ]]
}

step_csharp_http() {
  STEP="csharp-http"
  local t0=$EPOCHREALTIME action="present"
  local package="libmono-system-net-http4.0-cil"
  local what="C# HttpClient assembly (Debian $package)"
  if ! csharp_http_present; then
    action="installed"
    local log="$LOGS/csharp-http-apt.log" sudo=() version
    command -v apt-get >/dev/null 2>&1 || die "$what" "$MONO_LIB_DIR/System.Net.Http.dll is missing and apt-get is not available"
    version="$(dpkg-query -W -f='${Version}' mono-runtime 2>/dev/null)" \
      || die "$what" "cannot read the installed mono-runtime version (dpkg-query -W mono-runtime)"
    if [[ $(id -u) -ne 0 ]]; then
      command -v sudo >/dev/null 2>&1 || die "$what" "installing $package with apt-get needs root (no sudo available)"
      sudo=(sudo -n)
    fi
    : >"$log"
    run_logged "$log.update" "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q \
      || die "$what" "apt-get update failed" "$log.update"
    run_logged "$log" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
      install -y -q --no-install-recommends "$package=$version" \
      || die "$what" "apt-get install $package=$version (the version of mono-runtime) failed" "$log"
    csharp_http_present || die "$what" "apt-get succeeded but $MONO_LIB_DIR/System.Net.Http.dll is still missing" "$log"
  fi

  local fp
  fp="net-http=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null) mono=$(mono --version 2>&1 | head -n 1)"
  if ! stamp_ok csharp-http "$fp"; then
    action="$action+verified"
    local d="$TMP/cs-http" slog="$LOGS/csharp-http-smoke.log"
    mkdir -p "$d"
    cat >"$d/Main.cs" <<'EOF'
using System;
using System.Net.Http;

public static class Program
{
    public static int Main()
    {
        using (var client = new HttpClient(new HttpClientHandler()))
        {
            Console.WriteLine(client.Timeout.TotalSeconds);
        }

        return 0;
    }
}
EOF
    run_logged "$slog" mcs -langversion:7.2 -warnaserror+ -r:System.Net.Http.dll -out:"$d/main.exe" "$d/Main.cs" \
      || die "$what" "smoke test: mcs could not compile against System.Net.Http.dll" "$slog"
    local out
    out="$(mono "$d/main.exe" 2>&1)" || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: mono could not run an HttpClient program" "$slog"; }
    [[ "$out" == "100" ]] || { printf '%s\n' "$out" >>"$slog"; die "$what" "smoke test: unexpected output '$out'" "$slog"; }
    stamp_write csharp-http "$fp"
  fi
  say "csharp: System.Net.Http $action ($(elapsed "$t0"))"
}

step_csharp_http
