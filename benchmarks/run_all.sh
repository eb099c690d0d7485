#!/usr/bin/env bash
# Runs every benchmark with the project's virtual environment (set up first by bootstrap.sh).
# Not part of the test suite: speed is measured here, on demand. Each benchmark has options of its
# own (--help); run it by hand to use them. About 4 minutes on 2 cores, plus the first time the
# creation of benchmarks/.venv-tfc (tensorflow-cloud, for bench_load.py and bench_images.py).
# bench_images.py runs when the test engine and registry are up (TFC_TEST_REGISTRY set:
# eval "$(bash scripts/docker_services.sh start)"), and is skipped, saying so, otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
date -u +"%Y-%m-%d %H:%M UTC on $(nproc) cores, $(uname -m)"
for bench in bench_load bench_convert bench_local_job bench_logs bench_package bench_images; do
  echo
  echo "== benchmarks/$bench.py"
  if [ "$bench" = bench_images ] && [ -z "${TFC_TEST_REGISTRY:-}" ]; then
    echo "skipped: no Docker engine and registry (eval \"\$(bash scripts/docker_services.sh start)\")"
    continue
  fi
  timeout 900 .venv/bin/python "benchmarks/$bench.py"
done
