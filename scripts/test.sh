#!/usr/bin/env bash
# Command 2: set everything up, then run every check: ruff, mypy and the whole test suite
# (slow multi-process tests included). Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
export PATH="$root/.venv/bin:$PATH"
# Tests never touch the user's own job records.
export TFC_JUPYTER_HOME="${TFC_TEST_HOME:-$(mktemp -d)}"
echo "[test] ruff"
ruff check tfc_jupyter runtime tests benchmarks scripts
ruff format --check tfc_jupyter runtime tests benchmarks scripts
echo "[test] mypy"
mypy
echo "[test] pytest"
python -m pytest -p no:cacheprovider "$@"
