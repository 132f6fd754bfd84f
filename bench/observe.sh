#!/usr/bin/env bash
# bench=observe: what monitoring costs a training job. The same parameter-server job
# (examples/fashion_ps.yaml, 1 server and 2 workers, a fixed number of steps) runs with
# monitoring off and on, alternately, ROUNDS times each; "on" serves every role's /metrics and
# the launcher's dashboard, and a poller asks /api/status every second throughout (a dashboard
# left open: it scrapes every role). The workers' images/s (their "throughput" lines, summed)
# are compared by median; target: within 2%. off_spread (max - min of the "off" runs, over
# min) says how noisy the machine was: an overhead smaller than it is not resolved.
#   bash bench/observe.sh BUILD_DIR [--rounds N] [--steps N]
set -uo pipefail

build=${1:-build}
shift || true
rounds=5
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

off=() on=()
for ((i = 0; i < rounds; i++)); do
  # Which goes first alternates: a machine whose load drifts favours neither.
  if (( i % 2 == 0 )); then
    off+=("$(run off "$i")") || exit 1
    on+=("$(run on "$i")") || exit 1
  else
    on+=("$(run on "$i")") || exit 1
    off+=("$(run off "$i")") || exit 1
  fi
  echo "observe.sh: round $i: off ${off[-1]} images/s, on ${on[-1]} images/s" >&2
done
m_off=$(printf '%s\n' "${off[@]}" | median)
m_on=$(printf '%s\n' "${on[@]}" | median)
overhead=$(awk -v a="$m_off" -v b="$m_on" 'BEGIN {printf "%.1f", (a - b) / a * 100}')
spread=$(printf '%s\n' "${off[@]}" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f%%", (hi - lo) / lo * 100}')
echo "bench=observe model=fashion_ps workers=2 steps=$steps rounds=$rounds off_images_per_s=$m_off on_images_per_s=$m_on overhead=${overhead}% off_spread=$spread target=2%"
