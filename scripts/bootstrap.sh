#!/usr/bin/env bash
# Sets up everything the project needs on a fresh machine: a virtual environment in .venv with
# the package (editable) and its development extras. Safe to run again: it only adds what is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export SSL_CERT_FILE="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
export UV_NATIVE_TLS=1

if ! command -v uv >/dev/null 2>&1; then
  echo "[bootstrap] installing uv"
  python3 -m pip install -q --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  echo "[bootstrap] creating .venv"
  uv venv -q .venv --python "$(command -v python3)"
fi
stamp=.venv/.tfc-bootstrap-stamp
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[bootstrap] installing tfc_jupyter[dev] into .venv"
  VIRTUAL_ENV="$root/.venv" uv pip install -q -e ".[dev]"
  # tf-keras runs Keras `fit` under MultiWorkerMirroredStrategy (Keras 3 cannot on TF >= 2.16).
  # --no-deps: its metadata asks for the full `tensorflow` wheel, we already have tensorflow-cpu.
  VIRTUAL_ENV="$root/.venv" uv pip install -q --no-deps "tf-keras~=$(.venv/bin/python - <<'PY'
from importlib.metadata import version
print(".".join(version("tensorflow-cpu").split(".")[:2]) + ".0")
PY
)"
  # The bytecode of what is installed: uv writes no .pyc, and where PYTHONDONTWRITEBYTECODE is
  # set nothing else does; every process (each job, each trial) then compiled its imports again.
  # What has its .pyc already is skipped. Some packages' test data does not compile:
  # compileall's exit status says nothing here.
  .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1 || true
  echo "$want" > "$stamp"
fi
# This checkout's own modules (the editable install), compiled when changed: see above.
.venv/bin/python -m compileall -q -j 0 tfc_jupyter runtime/tfc_runtime >/dev/null
# The JupyterLab extension: labextension/ (TypeScript) -> tfc_jupyter/labextension/. The package
# build makes it (hatch-jupyter-builder, also in the editable install above); here it is rebuilt
# only when one of its sources is newer than the build, and the copy in .venv is refreshed.
lab_out=tfc_jupyter/labextension
lab_dest=.venv/share/jupyter/labextensions/tfc-jupyter
if [ ! -f "$lab_out/static/style.js" ] || [ -n "$(find labextension/src labextension/style \
    labextension/schema labextension/package.json labextension/tsconfig.json labextension/yarn.lock \
    -newer "$lab_out/package.json" -print -quit 2>/dev/null)" ]; then
  echo "[bootstrap] building the JupyterLab extension (labextension/ -> $lab_out)"
  lab_log="$(mktemp)"
  if ! (cd labextension && export PATH="$root/.venv/bin:$PATH" \
      && jlpm install --immutable && jlpm build) >"$lab_log" 2>&1; then
    tail -n 40 "$lab_log" >&2
    echo "[bootstrap] the JupyterLab extension did not build (log above)" >&2
    exit 1
  fi
  rm -f "$lab_log"
fi
if ! diff -rq -x install.json "$lab_out" "$lab_dest" >/dev/null 2>&1; then
  rm -rf "$lab_dest"
  mkdir -p "$(dirname "$lab_dest")"
  cp -R "$lab_out" "$lab_dest"
  cp labextension/install.json "$lab_dest/"
fi
echo "[bootstrap] ready: $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])') in .venv"
