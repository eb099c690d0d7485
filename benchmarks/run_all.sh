#!/usr/bin/env bash
# Runs every benchmark with the project's virtual environment (set up first by bootstrap.sh).
# Not part of the test suite: speed is measured here, on demand. Each benchmark has options of its
# own (--help); run it by hand to use them. About 3 minutes on 2 cores, plus the first time the
# creation of benchmarks/.venv-tfc (tensorflow-cloud, for bench_load.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
date -u +"%Y-%m-%d %H:%M UTC on $(nproc) cores, $(uname -m)"
for bench in bench_load bench_convert bench_local_job; do
  echo
  echo "== benchmarks/$bench.py"
  timeout 600 .venv/bin/python "benchmarks/$bench.py"
done
