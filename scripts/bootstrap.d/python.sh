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
# trio (with attrs, outcome, sortedcontainers) runs the adapter's async tests on trio as well as
# asyncio (the adapter sleeps and times out through anyio); httpx-retries is the peer the fault
# runner's overhead mode measures beside the adapter (cargo xtask bench).

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
  trio==0.35.0
  attrs==26.1.0
  outcome==1.3.0.post0
  sortedcontainers==2.4.0
  httpx-retries==0.6.0
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
import httpx_retries
import trio

assert trio.__version__ == "0.35.0", trio.__version__
print("httpx", httpx.__version__, "with", sorted(installed))
PY
    printf '%s' "${PYTHON_HTTPX_PACKAGES[*]}" >"$stamp"
  fi
  say "python httpx: ${PYTHON_HTTPX_PACKAGES[*]} $action ($(elapsed "$t0"))"
}

step_python_httpx

# openapi-python-client, the generator examples/python/ builds its SDK with (cargo xtask
# runtime-tests --lang python), in $CACHE/python-openapi, beside httpx's tree (which the generator
# and the SDK it generates import too, from $CACHE/python-httpx). Pinned with every dependency the
# generator needs that httpx's tree does not have, installed with --no-deps, checked as above.
PYTHON_OPENAPI_PACKAGES=(
  openapi-python-client==0.29.1
  annotated-doc==0.0.7
  annotated-types==0.8.0
  jinja2==3.1.6
  markupsafe==3.0.4
  markdown-it-py==4.3.0
  mdurl==0.1.2
  pydantic==2.14.4
  pydantic-core==2.50.5
  pygments==2.21.0
  rich==15.0.0
  ruamel.yaml==0.19.1
  ruff==0.17.6
  shellingham==1.5.4
  typer==0.27.3
  typing-inspection==0.4.5
)

step_python_openapi() {
  STEP="python-openapi"
  local t0=$EPOCHREALTIME what="openapi-python-client (${PYTHON_OPENAPI_PACKAGES[*]})"
  local dir="$CACHE/python-openapi" log="$LOGS/python-openapi.log" action="cached"
  local stamp="$dir/.pinned"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "${PYTHON_OPENAPI_PACKAGES[*]}" ]]; then
    action="installed"
    rm -rf "$dir"
    run_logged "$log" python3 -m pip install --disable-pip-version-check --no-input --quiet \
      --no-deps --only-binary=:all: --target "$dir" "${PYTHON_OPENAPI_PACKAGES[@]}" \
      || die "$what" "pip install failed (PyPI unreachable, or version missing?)" "$log"
    PYTHONPATH="$dir:$CACHE/python-httpx:$CACHE/python" run_logged "$log.check" python3 - \
      "$dir" "$CACHE/python-httpx" <<'PY' \
      || die "$what" "after pip install, openapi-python-client lacks a dependency" "$log.check"
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

dists = list(metadata.distributions(path=[sys.argv[1]]))
beside = list(metadata.distributions(path=[sys.argv[2]]))
installed = {canonicalize_name(d.metadata["Name"]) for d in dists + beside}
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
import openapi_python_client

print("openapi-python-client", metadata.version("openapi-python-client"))
PY
    printf '%s' "${PYTHON_OPENAPI_PACKAGES[*]}" >"$stamp"
  fi
  say "python openapi-python-client: ${PYTHON_OPENAPI_PACKAGES[*]} $action ($(elapsed "$t0"))"
}

step_python_openapi
