#!/usr/bin/env bash
# Runs every benchmark program and prints only their bench=... lines on stdout; everything
# else (progress, notes, errors) goes to stderr. Called by `make bench` as
#   bash bench/run.sh BUILD_DIR
# To add a benchmark: build it into BUILD_DIR/bin (bench/CMakeLists.txt) and add one line to
# BENCHES below: the program's name, then its arguments; a script in bench/ is named
# `script:NAME` and gets BUILD_DIR as its first argument. Each program runs its own peer
# (iperf3, PyTorch, ...) in the same run, so that its ratios compare like with like.
set -uo pipefail

BENCHES=(
  "engine_bench"
  "ps_bench"
  "stream_bench"
  "transport_bench"
  "allreduce_bench"
  "allreduce_train_bench"
  "pipeline_bench"
  "pipeline_vcpu_bench 3"
  "sweep_bench"
  "chaos_allreduce_bench"
  "chaos_allreduce_bench --kill-worker 0"
  "chaos_bench --seed 1"
  "chaos_bench --seed 1 --ps-replicas 1"
  "serve_bench --batches 1,64"
  "script:scaling.sh --quick"
  "script:observe.sh"
)

build=${1:-build}
bin="$build/bin"
here=$(cd "$(dirname "$0")" && pwd)
status=0
for entry in "${BENCHES[@]}"; do
  read -r -a argv <<< "$entry"
  prog="$bin/${argv[0]}"
  if [[ ${argv[0]} == script:* ]]; then
    prog="$here/${argv[0]#script:}"
    argv=("${argv[0]}" "$build" "${argv[@]:1}")
  elif [[ ! -x "$prog" ]]; then
    echo "bench/run.sh: $prog is not built; skipping" >&2
    continue
  fi
  echo "bench/run.sh: running ${entry}" >&2
  # stdout: bench= lines pass through, anything else is moved to stderr.
  "$prog" "${argv[@]:1}" | while IFS= read -r line; do
    if [[ $line == bench=* ]]; then echo "$line"; else echo "$line" >&2; fi
  done
  rc=${PIPESTATUS[0]}
  if (( rc != 0 )); then
    echo "bench/run.sh: ${argv[0]} failed with status $rc" >&2
    status=1
  fi
done
exit $status
