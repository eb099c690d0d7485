#!/usr/bin/env bash
# Runs every benchmark with the project's virtual environment (set up first by bootstrap.sh), each
# to its end: one that fails or passes its deadline is reported, and the next one runs all the
# same. Not part of the test suite: speed is measured here, on demand. Each benchmark has options
# of its own (--help); run it by hand to use them. About 6 minutes on 2 cores, plus the first time
# the creation of benchmarks/.venv-tfc (tensorflow-cloud, for bench_load.py and bench_images.py).
# bench_images.py runs when the test engine and registry are up (TFC_TEST_REGISTRY set:
# eval "$(bash scripts/docker_services.sh start)"), and is skipped, saying so, otherwise.
# BENCH_DEADLINE (seconds, default 900) bounds each benchmark.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh || echo "bootstrap.sh failed (status $?): running with .venv as it is"
deadline="${BENCH_DEADLINE:-900}"
log="$(mktemp -t tfc-bench-XXXXXX.log)"
trap 'rm -f "$log"' EXIT
date -u +"%Y-%m-%d %H:%M UTC on $(nproc) cores, $(uname -m); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
results=()
for bench in bench_launch bench_load bench_convert bench_local_job bench_warm bench_logs bench_names_back bench_package bench_images; do
  echo
  echo "== benchmarks/$bench.py"
  if [ "$bench" = bench_images ] && [ -z "${TFC_TEST_REGISTRY:-}" ]; then
    echo "skipped: no Docker engine and registry (eval \"\$(bash scripts/docker_services.sh start)\")"
    results+=("$bench: skipped (no Docker engine and registry)")
    continue
  fi
  started=$SECONDS
  timeout "$deadline" .venv/bin/python "benchmarks/$bench.py" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
  took=$((SECONDS - started))
  if [ "$status" -eq 0 ]; then
    results+=("$bench: done in ${took} s")
  elif [ "$status" -eq 124 ]; then
    results+=("$bench: STOPPED at its deadline of ${deadline} s")
  else
    results+=("$bench: FAILED with status $status after ${took} s")
  fi
done
echo
echo "== closing note ($(date -u +'%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for line in "${results[@]}"; do
  echo "  $line"
done
echo "  issue 27's figures (bench_launch.py):"
grep -E "^  (run|tf_run|tf_workers|magic|plan): " "$log" || echo "    none: bench_launch.py did not finish"
echo "  issue 49's names back (bench_names_back.py):"
grep -E "^ratio " "$log" || echo "    none: bench_names_back.py did not finish"
