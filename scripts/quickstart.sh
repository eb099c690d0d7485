#!/usr/bin/env bash
# Command 1: set everything up, then run the quickstart notebook: a real 2-process
# MultiWorkerMirroredStrategy training job on this machine, launched by %%tfc_run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
exec "$root/.venv/bin/python" "$root/scripts/quickstart.py" "$@"
