# shellcheck shell=bash
# Python's HTTP client adapter (runtime/python/httpx_transport.py) is checked and run against
# httpx: mypy --strict reads its type hints, the adapter's unit tests and the fault-matrix runner
# (conformance/faults/harness/python/) import it. Installed with `pip install --target` into
# $CACHE/python-httpx, beside (not inside) the pinned tools of $CACHE/python, and put on
# PYTHONPATH by xtask/src/toolchains/python.rs.
#
# Sourced by scripts/bootstrap-toolchains.sh (say, die, run_logged, $CACHE, $LOGS, $STEP).
# Every package is pinned, dependencies included, and installed with --no-deps, so the tree is
# exactly this list on every machine. The check below fails if httpx needs one not listed.
# exceptiongroup is anyio's on Python 3.10 only, and sniffio is optional (httpcore uses it to tell
# asyncio from trio when present): both are pinned so the tree is one whatever the Python.
# h2 (with hpack and hyperframe) is httpx's `http2` extra: `httpx.Client(http2=True)` needs it, and
# the fault runner speaks h2c and h2 with it, as the adapter's HTTP/2 tests do.

PYTHON_HTTPX_PACKAGES=(
  httpx==0.28.1
  httpcore==1.0.9
  h11==0.16.0
  anyio==4.16.0
  certifi==2026.5.20
  idna==3.20
  sniffio==1.3.1
  typing_extensions==4.16.0
  exceptiongroup==1.3.1
  h2==4.4.1
  hpack==4.2.0
  hyperframe==6.1.0
)

step_python_httpx() {
  STEP="python-httpx"
  local t0=$EPOCHREALTIME what="httpx for Python (${PYTHON_HTTPX_PACKAGES[*]})"
  local dir="$CACHE/python-httpx" log="$LOGS/python-httpx.log" action="cached"
  local stamp="$dir/.pinned"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "${PYTHON_HTTPX_PACKAGES[*]}" ]]; then
    action="installed"
    # pip --target does not replace an older tree cleanly: start from an empty folder.
    rm -rf "$dir"
    run_logged "$log" python3 -m pip install --disable-pip-version-check --no-input --quiet \
      --no-deps --only-binary=:all: --target "$dir" "${PYTHON_HTTPX_PACKAGES[@]}" \
      || die "$what" "pip install failed (PyPI unreachable, or version missing?)" "$log"
    # Every requirement of every installed distribution (for this Python, markers evaluated with
    # the `packaging` of the pinned tools) is installed too, and httpx builds both transports.
    PYTHONPATH="$dir:$CACHE/python" run_logged "$log.check" python3 - "$dir" <<'PY' \
      || die "$what" "after pip install, httpx does not import or lacks a dependency" "$log.check"
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

dists = list(metadata.distributions(path=[sys.argv[1]]))
installed = {canonicalize_name(d.metadata["Name"]) for d in dists}
missing = [
    f"{d.metadata['Name']} needs {text}"
    for d in dists
    for text in d.requires or []
    for req in [Requirement(text)]
    if (req.marker is None or req.marker.evaluate({"extra": ""}))
    and canonicalize_name(req.name) not in installed
]
if missing:
    sys.exit("missing dependencies: " + "; ".join(missing))
import httpx

assert httpx.__version__ == "0.28.1", httpx.__version__
httpx.Client(transport=httpx.HTTPTransport()).close()
httpx.AsyncClient(transport=httpx.AsyncHTTPTransport())
httpx.Client(transport=httpx.HTTPTransport(http2=True)).close()
print("httpx", httpx.__version__, "with", sorted(installed))
PY
    printf '%s' "${PYTHON_HTTPX_PACKAGES[*]}" >"$stamp"
  fi
  say "python httpx: ${PYTHON_HTTPX_PACKAGES[*]} $action ($(elapsed "$t0"))"
}

step_python_httpx
