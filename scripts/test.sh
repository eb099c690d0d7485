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
echo "[test] check_auth"
python scripts/check_auth.py  # every handler of the jobs API is @tornado.web.authenticated
echo "[test] labextension: lint, types, jest"
(cd labextension && jlpm install --immutable && jlpm lint:check && jlpm types:check && jlpm test)
# Browser tests need Debian chromium (installed when missing; they skip without it).
bash scripts/browser_deps.sh
# The Docker tests' engine and registry (installed and started when missing; stopped on exit,
# even when tests fail, unless they were already running). See scripts/docker_services.sh.
TFC_DOCKER_OWNED=0
trap 'if [ "$TFC_DOCKER_OWNED" = 1 ]; then bash scripts/docker_services.sh stop; fi' EXIT
docker_env="$(bash scripts/docker_services.sh start)"
eval "$docker_env"
# Two test processes (pytest-xdist): most slow tests wait on jobs, servers and browsers, so two
# keep both cores busy. A file's tests stay together in one process, in their order, and the
# browser tests share one (tests/conftest.py). TFC_TEST_PROCESSES=0 runs one process.
processes="${TFC_TEST_PROCESSES:-2}"
parallel=()
if [ "$processes" != 0 ]; then
  parallel=(-n "$processes" --dist loadgroup)
fi
echo "[test] pytest (${processes} processes; $(df -Ph . | awk 'NR == 2 {print $4}') free on disk)"
python -m pytest -p no:cacheprovider "${parallel[@]}" "$@"
# Estimator needs TensorFlow <= 2.15: tests/tf215 run in their own environment, .venv-tf215.
# A marker filter given to this script (-m "not slow") applies there too; other arguments don't.
markers=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[i]}" = "-m" ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    markers=(-m "${args[i + 1]}")
  fi
done
echo "[test] pytest tests/tf215 (TensorFlow 2.15)"
bash scripts/bootstrap_tf215.sh
.venv-tf215/bin/python -m pytest -p no:cacheprovider "${markers[@]}" tests/tf215
