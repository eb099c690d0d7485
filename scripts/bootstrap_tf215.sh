#!/usr/bin/env bash
# Sets up .venv-tf215: TensorFlow 2.15 with tensorflow-estimator, the last TensorFlow that has
# tf.estimator (RunConfig, TPUConfig). tests/tf215 run there (scripts/test.sh runs them).
#
# tfc_jupyter goes in editable WITHOUT its dev extra (that would pull TensorFlow >= 2.16 over
# 2.15): its runtime dependencies are read from pyproject.toml, and a .pth file puts the source
# folders on the path, as an editable install does (dev-mode-dirs "." and "runtime"), without
# running the package's build hooks (the JupyterLab extension build needs node). Safe to run
# again: a stamp file makes a rerun with nothing changed a no-op.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export SSL_CERT_FILE="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
export UV_NATIVE_TLS=1
venv=.venv-tf215

if ! command -v uv >/dev/null 2>&1; then
  echo "[bootstrap-tf215] installing uv"
  python3 -m pip install -q --disable-pip-version-check uv
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "[bootstrap-tf215] creating $venv"
  uv venv -q "$venv" --python "$(command -v python3)"
fi
stamp="$venv/.tfc-bootstrap-stamp"
want="$(cat pyproject.toml scripts/bootstrap_tf215.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[bootstrap-tf215] installing tensorflow-cpu 2.15, tensorflow-estimator and tfc_jupyter"
  mapfile -t deps < <("$venv/bin/python" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
PY
)
  VIRTUAL_ENV="$root/$venv" uv pip install -q \
    "tensorflow-cpu==2.15.1" "tensorflow-estimator~=2.15.0" "${deps[@]}" \
    pytest pytest-timeout ipython nbformat psutil packaging
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  printf '%s\n%s\n' "$root" "$root/runtime" > "$site/_tfc_jupyter_editable.pth"
  "$venv/bin/python" -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true  # as bootstrap.sh
  echo "$want" > "$stamp"
fi
echo "[bootstrap-tf215] ready: TensorFlow $("$venv/bin/python" - <<'PY'
from importlib.metadata import version
print(version("tensorflow-cpu"))
PY
) in $venv"
