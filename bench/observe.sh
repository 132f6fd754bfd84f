#!/usr/bin/env bash
# bench=observe: what monitoring costs a training job. The same parameter-server job
# (examples/fashion_ps.yaml, 1 server and 2 workers, a fixed number of steps) runs with
# monitoring off and on, alternately, ROUNDS times each; "on" serves every role's /metrics and
# the launcher's dashboard, and a poller asks /api/status every second throughout (a dashboard
# left open: it scrapes every role). The workers' images/s (their "throughput" lines, summed)
# are compared round by round: overhead is the median of the rounds' 1 - on/off (each pair
# ran back to back, so a drift of the machine's load between rounds cancels), with the
# rounds' min and max beside it. off_spread (max - min of the "off" runs, over min) says how
# noisy the machine was: an overhead smaller than it is not resolved; then the in-process
# measurement (build/bin/observe_bench: bench=observe_inprocess and the monitoring code's own
# cost per step, bench=observe_cost) bounds it. load: the 1-minute load average before and
# after. Target: within 2%.
#   bash bench/observe.sh BUILD_DIR [--rounds N] [--steps N] [--quick]
set -uo pipefail

build=${1:-build}
shift || true
rounds=7
steps=1500
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --quick) rounds=2; steps=600; shift ;;
    *) echo "observe.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
trib="$build/bin/trib"
job="$here/../examples/fashion_ps.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One run: prints the workers' summed images/s.
run() {
  local mode=$1 n=$2 out="$work/run-$1-$2" port poller=""
  local args=(train "$job" --output "$out" --set "training.steps=$steps" --set "training.eval_every=100000")
  if [[ $mode == on ]]; then
    port=$(free_port)
    args+=(--metrics-port "$port")
    python3 -c 'import sys, time, urllib.request
while True:
    time.sleep(1)
    try: urllib.request.urlopen(sys.argv[1], timeout=2).read()
    except Exception: pass' "http://127.0.0.1:$port/api/status" &
    poller=$!
  fi
  "$trib" "${args[@]}" > "$work/log-$mode-$n" 2>&1
  local rc=$?
  [[ -n $poller ]] && kill "$poller" 2>/dev/null
  if (( rc != 0 )); then echo "observe.sh: the $mode run failed:" >&2; cat "$work/log-$mode-$n" >&2; return 1; fi
  grep -o 'worker [0-9]* throughput: [0-9.]* images/s' "$work/log-$mode-$n" | awk '{s += $4} END {print s}'
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

load() { cut -d' ' -f1 /proc/loadavg; }
load_before=$(load)
off=() on=() overhead=()
for ((i = 0; i < rounds; i++)); do
  # Which goes first alternates: a machine whose load drifts favours neither.
  if (( i % 2 == 0 )); then
    off+=("$(run off "$i")") || exit 1
    on+=("$(run on "$i")") || exit 1
  else
    on+=("$(run on "$i")") || exit 1
    off+=("$(run off "$i")") || exit 1
  fi
  overhead+=("$(awk -v a="${off[-1]}" -v b="${on[-1]}" 'BEGIN {printf "%.2f", (a - b) / a * 100}')")
  echo "observe.sh: round $i: off ${off[-1]} images/s, on ${on[-1]} images/s (${overhead[-1]}%), load $(load)" >&2
done
m_off=$(printf '%s\n' "${off[@]}" | median)
m_on=$(printf '%s\n' "${on[@]}" | median)
m_over=$(printf '%s\n' "${overhead[@]}" | median)
o_min=$(printf '%s\n' "${overhead[@]}" | sort -g | head -1)
o_max=$(printf '%s\n' "${overhead[@]}" | sort -g | tail -1)
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f%%", (hi - lo) / lo * 100}'; }
off_spread=$(printf '%s\n' "${off[@]}" | spread)
on_spread=$(printf '%s\n' "${on[@]}" | spread)
echo "bench=observe model=fashion_ps workers=2 steps=$steps rounds=$rounds off_images_per_s=$m_off on_images_per_s=$m_on overhead=${m_over}% overhead_min=${o_min}% overhead_max=${o_max}% off_spread=$off_spread on_spread=$on_spread load=${load_before}-$(load) target=2%"
# The same in one process, and the monitoring code's own cost per step (the bound when the
# machine's noise exceeds 2%).
if [[ -x $build/bin/observe_bench ]]; then
  "$build/bin/observe_bench" --rounds "$rounds"  # its own steps: one process runs them faster
else
  echo "observe.sh: $build/bin/observe_bench is not built (cmake --build $build --target observe_bench)" >&2
fi
