#!/usr/bin/env bash
# The planner against the emulation: for every point bench/scaling.sh measured (its --tsv
# file), what `trib plan` predicts for the same hosts, link and measured compute, one line:
#   bench=plan model=cnn strategy=allreduce compression=none workers=2 ps=0 link_gbps=1 batch=64
#     predicted_images_per_s=.. measured_images_per_s=.. error=..
# error = |predicted - measured| / measured. The compute is the emulated host's own rate
# (single_host in the file), so only the model of communication is under test.
#
#   bench/plan_check.sh BUILD_DIR TSV [--cpu-ns-per-byte 1.1] [--latency-us US] [--period-us 10000]
#
# CPU per byte: 1.1 ns, what a worker host spends per byte it sends or receives, measured on
# these hosts: the frames' encryption (AES-256-GCM) and the kernel's TCP path, which the
# emulation charges to the host's cgroup (docs/scaling_exchange_cpu.md).
# Latency per hop: the emulated host's, not the veth's (tens of microseconds). A host capped at
# F of a core (CFS bandwidth control, quota period P: trib-emulate --period-us, 10 ms) that
# has spent its quota sleeps out the rest of the period, (1 - F) P at most; a message that
# reaches a busy host waits half that on average, and a hop (request served, reply taken)
# wakes two hosts: (1 - F) P per hop, 7.5 ms at a quarter core. --latency-us overrides it.
set -uo pipefail
build=${1:?usage: bench/plan_check.sh BUILD_DIR TSV}
tsv=${2:?usage: bench/plan_check.sh BUILD_DIR TSV}
shift 2
cpu_ns=1.1
latency_us=""
period_us=10000
while (($#)); do
  case $1 in
    --cpu-ns-per-byte) cpu_ns=$2; shift 2 ;;
    --latency-us) latency_us=$2; shift 2 ;;
    --period-us) period_us=$2; shift 2 ;;
    *) echo "bench/plan_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
trib=$build/bin/trib
[[ -x $trib ]] || { echo "bench/plan_check.sh: $trib is not built" >&2; exit 2; }

tail -n +2 "$tsv" | while IFS=$'\t' read -r model strat workers servers link batch ours _bound _peer single cpus rate_mbit; do
  [[ $ours == 0 || -z $single || $single == 0 ]] && continue
  case $strat in
    allreduce) kind="strategy=allreduce compression=none ps=0" ;;
    allreduce_bf16) kind="strategy=allreduce compression=bf16 ps=0" ;;
    ps?_async) kind="strategy=ps_async compression=none ps=${strat:2:1}" ;;
    ps?_sync) kind="strategy=ps_sync compression=none ps=${strat:2:1}" ;;
    ps?_async_ahead) kind="strategy=ps_async compression=none ps=${strat:2:1}" ;;
    *) continue ;;
  esac
  step_ms=$(awk -v b="$batch" -v s="$single" -v c="$cpus" 'BEGIN { printf "%.4f", b / s * c * 1000 }')
  hop_us=$latency_us
  [[ -z $hop_us ]] && hop_us=$(awk -v c="$cpus" -v p="$period_us" 'BEGIN { f = c < 1 ? c : 1; printf "%.0f", (1 - f) * p }')
  cfg=$here/examples/fashion_$model.yaml
  extra=()
  [[ $model == mlp ]] && extra=(--set model.layers.2.units=256)
  [[ $strat == *_ahead ]] && extra+=(--set strategy.ps_pull_ahead=true)
  [[ $strat == ps* ]] && extra+=(--set strategy.placement=partitioned)  # as bench/scaling.sh runs them
  line=$("$trib" plan "$cfg" "${extra[@]}" --hosts $((workers + 2)) --cores-per-host "$cpus" \
           --link "${rate_mbit}mbit" --latency-us "$hop_us" --cpu-ns-per-byte "$cpu_ns" \
           --step-ms "$batch=$step_ms" 2>/dev/null | grep -F "plan workers=$workers $kind batch=$batch ")
  predicted=$(grep -oE 'images_per_s=[0-9.]+' <<< "$line" | head -1 | cut -d= -f2)
  [[ -z $predicted ]] && continue
  awk -v m="$model" -v k="$kind" -v w="$workers" -v l="$link" -v b="$batch" -v p="$predicted" -v o="$ours" 'BEGIN {
    e = p > o ? (p - o) / o : (o - p) / o
    printf "bench=plan model=%s %s workers=%d link_gbps=%s batch=%d predicted_images_per_s=%.0f measured_images_per_s=%.0f error=%.2f\n", m, k, w, l, b, p, o, e }'
done
