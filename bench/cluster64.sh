#!/usr/bin/env bash
# A large emulated cluster (scripts/trib-emulate; as root): a tiny job on HOSTS members
# (servers and workers, one per host, --cpus each) runs a few steps; the coordinator has a
# host of its own with --coordinator-cpus (at 0.02 core, beside a worker, it could not
# answer 64 members: their `leave` requests timed out, docs/scaling.md).
# Rendezvous, heartbeats and the steps must all work; prints how long the cluster took to
# form (every member started to every worker training) and the whole job:
#   bench=cluster_form members=64 ps=4 workers=60 form_s=.. job_s=.. ok=1
# The tiny model has 6 variables: with more servers than that, one holds none, and the final
# checkpoint fails ("ps 6: save part 0 of 0", docs/scaling.md).
#
#   bench/cluster64.sh BUILD_DIR [--hosts 64] [--ps 4] [--cpus 0.02] [--steps 5]
#                      [--coordinator-cpus 0.25]
set -uo pipefail
build=${1:?usage: bench/cluster64.sh BUILD_DIR [--hosts N] [--ps K] [--cpus F] [--steps S]}
shift
hosts=64 ps=4 cpus=0.02 steps=5 coordinator_cpus=0.25
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --ps) ps=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --coordinator-cpus) coordinator_cpus=$2; shift 2 ;;
    *) echo "bench/cluster64.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
((EUID == 0)) || { echo "bench/cluster64.sh: needs root for the emulated hosts; skipping" >&2; exit 0; }
here=$(cd "$(dirname "$0")/.." && pwd)
emu=$here/scripts/trib-emulate
trib=$(cd "$build" && pwd)/bin/trib
workers=$((hosts - ps))
name=big
work=$(mktemp -d /tmp/trib_cluster64.XXXXXX)
trap '"$emu" down --name $name >/dev/null 2>&1; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
chmod 600 "$work/secret"
"$emu" up --name $name --hosts $((hosts + 1)) --cpus "$cpus" --host-cpus "0=$coordinator_cpus" --rate 100mbit || exit 1

# The tiny job: the example MLP with one hidden layer of 16, a few steps, heartbeats every
# 500 ms with a 10 s timeout (hosts at 0.02 core are slow to answer).
job=(examples/fashion_ps.yaml --set model.layers.1.units=16 --set model.layers.2.units=16
     --set training.batch=32 --set training.steps="$steps" --set training.eval_every=100000
     --set training.train_metrics=false --set data.train_subset=$((workers * 32 * (steps + 1)))
     --set data.test_subset=100 --set cluster.heartbeat_ms=500 --set cluster.peer_timeout_ms=10000
     --set cluster.join_timeout_s=300 --set strategy.mode=async)
now() { date +%s.%N; }
coord=$("$emu" addr --name $name 0):7000
t0=$(now)
cd "$here" || exit 1
"$emu" exec --name $name 0 -- "$trib" coordinator "${job[@]}" --set cluster.ps="$ps" --set cluster.workers="$workers" \
  --listen "$coord" --secret-file "$work/secret" --output "$work/run" > "$work/coord.log" 2>&1 &
pids=($!)
for ((i = 0; i < ps; i++)); do
  h=$((workers + 1 + i))
  "$emu" exec --name $name $h -- "$trib" ps --join "$coord" --index $i --bind "$("$emu" addr --name $name $h)" \
    --secret-file "$work/secret" --timeout 300 > "$work/ps$i.log" 2>&1 &
  pids+=($!)
done
for ((i = 0; i < workers; i++)); do
  "$emu" exec --name $name $((i + 1)) -- "$trib" worker --join "$coord" --index $i --bind "$("$emu" addr --name $name $((i + 1)))" \
    --secret-file "$work/secret" --timeout 300 > "$work/w$i.log" 2>&1 &
  pids+=($!)
done
# Formed: every worker has printed a training step (its first progress line).
formed=""
while [[ -z $formed ]]; do
  started=$(grep -lE '(^|[^a-z])step [0-9]+' "$work"/w*.log 2>/dev/null | wc -l)
  ((started >= workers)) && formed=$(now)
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 0.2
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
t1=$(now)
ok=1
((status == 0)) && grep -q "every worker finished" "$work/coord.log" || ok=0
if ((ok == 0)); then
  echo "bench/cluster64.sh: the job failed; the coordinator said:" >&2
  tail -5 "$work/coord.log" >&2
  rm -rf /tmp/trib_cluster64_failed && cp -r "$work" /tmp/trib_cluster64_failed &&
    echo "bench/cluster64.sh: every role's log is in /tmp/trib_cluster64_failed" >&2
fi
lost=$(cat "$work"/*.log | grep -c "was lost\|declared dead" || true)
form=NA
[[ -n $formed ]] && form=$(awk -v a="$t0" -v b="$formed" 'BEGIN { printf "%.1f", b - a }')
printf 'bench=cluster_form members=%d ps=%d workers=%d cpus_per_host=%s coordinator_cpus=%s form_s=%s job_s=%.1f lost=%d ok=%d\n' \
  "$hosts" "$ps" "$workers" "$cpus" "$coordinator_cpus" "$form" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$lost" "$ok"
