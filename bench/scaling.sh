#!/usr/bin/env bash
# The scaling table in an emulated cluster (scripts/trib-emulate; as root): Tributary's
# strategies and PyTorch DDP (../shared/peers/torch_ddp_peer.py) on the same emulated hosts,
# one bench=scaling line per point on stdout; progress on stderr. docs/scaling.md.
#
#   bench/scaling.sh BUILD_DIR [--quick] [--workers 1,2,4,8] [--links 1,10] [--models cnn,mlp]
#                    [--batches 64,256] [--strategies LIST] [--cpus 0.25] [--seconds 12]
#                    [--no-peer] [--tsv FILE] [--weight W] [--cpu-ns-per-byte 1.1]
#
# Every host gets F = min(--cpus, 1.5 / hosts) of a core (the hosts together stay under 1.5
# of the machine's cores) and a link of F x L Gbit/s for L in --links: a point emulates
# one-core machines on L Gbit/s links, slowed down 1/F times (figures are as measured; divide
# by cpus_per_host for the one-core machines'). Roles run in their own hosts: worker i on
# host i, parameter server j on host workers + j, the coordinator beside worker 0. Each run
# lasts about --seconds of its bound's steps (at least 8 steps).
# Strategies: ps1_async ps1_sync ps2_async ps2_sync allreduce allreduce_bf16; a ps strategy
# with _serial (ps1_async_serial) runs with strategy.ps_overlap: false, for before/after in one run;
# ps1_async_ahead and ps2_async_ahead with strategy.ps_pull_ahead: true.
# --quick (`make bench`): the CNN at batch 64, 1 and 2 workers, 1 Gbit/s, allreduce,
# allreduce_bf16, ps1_async and ps1_async_ahead beside DDP; about 5 minutes on two cores. Then
# bench/plan_check.sh prints the planner's prediction for every point (bench=plan lines).
set -uo pipefail

build=${1:?usage: bench/scaling.sh BUILD_DIR [options]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
emu=$here/scripts/trib-emulate
trib=$(cd "$build" && pwd)/bin/trib
# The peers live in ../shared/peers beside the repository (a worktree one level deeper:
# ../../shared); TRIB_PEERS_DIR overrides.
peer=${TRIB_PEERS_DIR:-$here/../shared/peers}/torch_ddp_peer.py
[[ -f $peer || -n ${TRIB_PEERS_DIR:-} ]] || peer=$here/../../shared/peers/torch_ddp_peer.py

workers_list=1,2,4,8
links=1,10
models=cnn,mlp
batches=64,256
strategies=ps1_async,ps1_sync,ps2_async,ps2_sync,allreduce,allreduce_bf16
cpus=0.25
seconds=12
use_peer=1
tsv=""
cpu_ns=1.1
weight=()  # trib-emulate --weight: priority over the machine's other processes
while (($#)); do
  case $1 in
    --quick) workers_list=1,2; links=1; models=cnn; batches=64; strategies=allreduce,allreduce_bf16,ps1_async,ps1_async_ahead; seconds=10; shift ;;
    --workers) workers_list=$2; shift 2 ;;
    --links) links=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --strategies) strategies=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --no-peer) use_peer=0; shift ;;
    --tsv) tsv=$2; shift 2 ;;
    --weight) weight=(--weight "$2"); shift 2 ;;
    --cpu-ns-per-byte) cpu_ns=$2; shift 2 ;;
    *) echo "bench/scaling.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $trib ]] || { echo "bench/scaling.sh: $trib is not built (cmake --build $build --target trib)" >&2; exit 2; }
((EUID == 0)) || { echo "bench/scaling.sh: needs root for the emulated hosts; skipping" >&2; exit 0; }
if [[ $use_peer == 1 ]] && { [[ ! -f $peer ]] || ! /usr/bin/python3 -c 'import torch' 2>/dev/null; }; then
  echo "bench/scaling.sh: no peer ($peer, or python3-torch missing): peer figures are NA" >&2
  use_peer=0
fi

name=scal
work=$(mktemp -d /tmp/trib_scaling.XXXXXX)
trap '"$emu" down --name $name >/dev/null 2>&1; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
[[ -n $tsv ]] || tsv=$work/points.tsv
secret=$work/secret
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret"
chmod 600 "$secret"

log() { echo "bench/scaling.sh: $*" >&2; }
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }

# Parameter bytes of the peer's models (docs/scaling_limits.md): MLP 784-256-256-10 and CNN.
model_bytes() { [[ $1 == mlp ]] && echo 1077288 || echo 13098536; }
job_args() {  # the example job made into the peer's model, trained with SGD, no evaluation
  local model=$1 batch=$2 steps=$3 workers=${4:-1}
  local cfg=$here/examples/fashion_$model.yaml
  # Every worker's shard holds its steps' batches (so each has at least one), within the
  # 60,000 training images.
  local subset=$((batch * (steps + 2) * workers))
  ((subset > 60000)) && subset=60000
  echo "$cfg --set training.batch=$batch --set training.steps=$steps --set training.eval_every=100000"
  echo " --set training.train_metrics=false --set data.test_subset=100 --set data.train_subset=$subset"
  echo " --set threads.intra=1 --set threads.inter=1"
  echo " --set optimizer.name=sgd --set optimizer.lr=0.01 --set schedule.name=constant"
  [[ $model == mlp ]] && echo " --set model.layers.2.units=256"
}

# One host alone: its images/s training locally (the compute every point is measured against).
single_host() {
  local model=$1 batch=$2 steps=$3 out
  # shellcheck disable=SC2046
  out=$("$emu" exec --name $name 0 -- "$trib" train $(job_args "$model" "$batch" "$steps") \
        --output "$work/single" 2>&1)
  rm -rf "$work/single"
  grep -oE ', [0-9.]+ images/s' <<< "$out" | tail -1 | grep -oE '[0-9.]+' || echo 0
}

# A trib cluster job: strategy args; the sum of the workers' images/s.
trib_cluster() {
  local model=$1 batch=$2 steps=$3 workers=$4 servers=$5 strat=$6 port=$((7000 + RANDOM % 1000))
  local coord; coord=$("$emu" addr --name $name 0):$port
  local pids=() i
  # shellcheck disable=SC2046
  "$emu" exec --name $name 0 -- "$trib" coordinator $(job_args "$model" "$batch" "$steps" "$workers") $strat \
    --set cluster.workers="$workers" --set cluster.ps="$servers" --set cluster.peer_timeout_ms="$peer_timeout_ms" \
    --listen "$coord" \
    --secret-file "$secret" --output "$work/run" > "$work/coord.log" 2>&1 &
  pids+=($!)
  for ((i = 0; i < servers; i++)); do
    "$emu" exec --name $name $((workers + i)) -- "$trib" ps --join "$coord" --index $i \
      --bind "$("$emu" addr --name $name $((workers + i)))" --secret-file "$secret" > "$work/ps$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < workers; i++)); do
    "$emu" exec --name $name $i -- "$trib" worker --join "$coord" --index $i \
      --bind "$("$emu" addr --name $name $i)" --secret-file "$secret" > "$work/w$i.log" 2>&1 &
    pids+=($!)
  done
  local st=0 p
  for p in "${pids[@]}"; do wait "$p" || st=1; done
  rm -rf "$work/run"
  if ((st)); then log "a trib role failed:"; tail -n 3 "$work"/*.log >&2; echo 0; return; fi
  if ((workers == 1)); then  # one worker prints the summary line only
    grep -ohE ', [0-9.]+ images/s' "$work"/w*.log | tail -1 | grep -oE '[0-9.]+' || echo 0
  else
    grep -ohE 'worker [0-9]+ throughput: [0-9.]+' "$work"/w*.log | awk '{ s += $4 } END { print s + 0 }'
  fi
}

# torch DDP, one process per worker host; the job's images/s (rank 0's line).
ddp() {
  local model=$1 batch=$2 workers=$3 i pids=() port=$((29500 + RANDOM % 1000))
  local master; master=$("$emu" addr --name $name 0)
  for ((i = 0; i < workers; i++)); do
    RANK=$i WORLD_SIZE=$workers MASTER_ADDR=$master MASTER_PORT=$port GLOO_SOCKET_IFNAME=eth0 \
      "$emu" exec --name $name $i -- /usr/bin/python3 "$peer" --model "$model" --batch "$batch" --threads 1 \
      --seconds "$seconds" --chunks 3 > "$work/ddp$i.log" 2>&1 &
    pids+=($!)
  done
  # Rank 0 sometimes hangs in destroy_process_group() after its result when the other ranks
  # have gone: give it 15 s after the job's line, then end the ranks still running.
  local deadline=""
  while :; do
    local alive=0
    for i in "${pids[@]}"; do kill -0 "$i" 2>/dev/null && alive=1; done
    ((alive)) || break
    if [[ -z $deadline ]] && grep -q 'world=' "$work/ddp0.log" 2>/dev/null; then deadline=$((SECONDS + 15)); fi
    if [[ -n $deadline ]] && ((SECONDS > deadline)); then
      for i in "${pids[@]}"; do kill "$i" 2>/dev/null; done
    fi
    sleep 0.5
  done
  for i in "${pids[@]}"; do wait "$i" 2>/dev/null; done
  local rate
  rate=$(grep -ohE 'world=[0-9]+ .*images_per_s=[0-9.]+' "$work/ddp0.log" | grep -oE 'images_per_s=[0-9.]+$' | cut -d= -f2)
  if [[ -z $rate ]]; then log "torch DDP printed no result:"; tail -5 "$work"/ddp*.log >&2; rate=0; fi
  echo "$rate"
}

# What perfect overlap of compute and communication allows: N x batch / max(compute, wire).
bound() {
  local strat=$1 workers=$2 batch=$3 single=$4 bytes=$5 link_Bps=$6
  local compute; compute=$(calc "$batch / $single")
  local wire=0
  case $strat in
    allreduce) wire=$(calc "2 * ($workers - 1) / $workers * $bytes / $link_Bps") ;;
    allreduce_bf16) wire=$(calc "($workers - 1) / $workers * $bytes / $link_Bps") ;;
    ps*) local k=${strat:2:1}
      wire=$(calc "($workers / $k > 1 ? $workers / $k : 1) * $bytes / $link_Bps") ;;
  esac
  calc "$workers * $batch / ($compute > $wire ? $compute : $wire)"
}

# The same bound with the exchange's own CPU: a worker host spends --cpu-ns-per-byte (1.1 ns,
# measured: docs/scaling_exchange_cpu.md) on every byte it sends or receives, beside
# its compute on the same share of a core. What a host without a spare core can reach
# whatever the overlap. (A server's CPU is left out: the planner models it.)
cpu_bound() {  # the args of bound() but the link's, then that bound and the host's core share
  local strat=$1 workers=$2 batch=$3 single=$4 bytes=$5 link_bound=$6 cpus=$7 moved=0
  case $strat in
    allreduce) moved=$(calc "4 * ($workers - 1) / $workers * $bytes") ;;
    allreduce_bf16) moved=$(calc "2 * ($workers - 1) / $workers * $bytes") ;;
    ps*) moved=$(calc "2 * $bytes") ;;
  esac
  local host; host=$(calc "$batch / $single + $moved * $cpu_ns * 1e-9 / $cpus")
  local wire; wire=$(calc "$workers * $batch / $link_bound")
  calc "$workers * $batch / ($host > $wire ? $host : $wire)"
}

# Parameter servers split the CNN's 12.8 MB dense kernel (98% of its bytes) by rows across the
# servers: greedy placement would put it whole on one, and a second server would carry 2% of
# the traffic (docs/placement.md). With one server it changes nothing.
ps_placement="--set strategy.placement=partitioned"
strategy_args() {
  case $1 in
    allreduce) echo "--set strategy.name=allreduce --set strategy.compression=none" ;;
    allreduce_bf16) echo "--set strategy.name=allreduce --set strategy.compression=bf16" ;;
    ps1_async|ps2_async) echo "--set strategy.name=ps --set strategy.mode=async $ps_placement" ;;
    ps1_sync|ps2_sync) echo "--set strategy.name=ps --set strategy.mode=sync $ps_placement" ;;
    ps?_*_serial) echo "$(strategy_args "${1%_serial}") --set strategy.ps_overlap=false" ;;
    ps1_async_ahead|ps2_async_ahead) echo "--set strategy.name=ps --set strategy.mode=async --set strategy.ps_pull_ahead=true $ps_placement" ;;
    *) echo "bench/scaling.sh: unknown strategy $1" >&2; exit 2 ;;
  esac
}

printf 'model\tstrategy\tworkers\tps\tlink_gbps\tbatch\tours\tbound\tpeer\tsingle\tcpus\trate_mbit\n' > "$tsv"
IFS=, read -r -a W <<< "$workers_list"
IFS=, read -r -a L <<< "$links"
IFS=, read -r -a M <<< "$models"
IFS=, read -r -a B <<< "$batches"
IFS=, read -r -a S <<< "$strategies"
for link in "${L[@]}"; do
  for workers in "${W[@]}"; do
    host_cpus=$(awk -v c="$cpus" -v h=$((workers + 2)) 'BEGIN { m = 1.5 / h; printf "%g", (c < m ? c : m) }')
    rate_mbit=$(calc "$host_cpus * $link * 1000")
    # Time runs 1/F slower on the hosts, so the 5 s after which a peer that accepts no data
    # counts as lost does too: at 16 workers on 0.08 core, two servers' links carry 10 s of
    # pulls a step, and a flow starved that long in the link's queue is not a lost worker.
    peer_timeout_ms=$(calc "int(5000 / $host_cpus)")
    link_Bps=$(calc "$rate_mbit * 1e6 / 8")
    "$emu" up --name $name --hosts $((workers + 2)) --cpus "$host_cpus" --rate "${rate_mbit}mbit" "${weight[@]}" || exit 1
    for model in "${M[@]}"; do
      bytes=$(model_bytes "$model")
      for batch in "${B[@]}"; do
        # About --seconds / 2 of compute alone (one core: CNN ~1500 images/s, MLP ~60000).
        single=$(single_host "$model" "$batch" \
          "$(calc "int($seconds / 2 * $host_cpus * ($model == \"mlp\" ? 60000 : 1500) / $batch) + 10")")
        peer_rate=NA
        ((use_peer && workers >= 1)) && peer_rate=$(ddp "$model" "$batch" "$workers")
        for strat in "${S[@]}"; do
          servers=0; [[ $strat == ps* ]] && servers=${strat:2:1}
          ((servers > workers + 2)) && continue
          log "$model batch $batch, $workers worker(s), $servers server(s), $link Gbit/s-equivalent: $strat"
          # shellcheck disable=SC2046
          b=$(bound "${strat%_serial}" "$workers" "$batch" "$single" "$bytes" "$link_Bps")
          steps=$(calc "int($seconds * $b / $workers / $batch) + 8")
          ours=$(trib_cluster "$model" "$batch" "$steps" "$workers" "$servers" "$(strategy_args "$strat")")
          eff=$(calc "$ours / ($workers * $single)")
          cb=$(cpu_bound "${strat%_serial}" "$workers" "$batch" "$single" "$bytes" "$b" "$host_cpus")
          ratio=NA; [[ $peer_rate != NA && $peer_rate != 0 ]] && ratio=$(awk -v o="$ours" -v p="$peer_rate" 'BEGIN { printf "%.2f", o / p }')
          comp=none; [[ $strat == *bf16 ]] && comp=bf16
          sname=${strat%_bf16}; mode=""
          [[ $strat == ps* ]] && { sname=ps; mode=" mode=${strat#ps?_}"; mode=${mode%_serial}; }
          [[ $strat == *_serial ]] && mode+=" ps_overlap=false"
          [[ $strat == *_ahead ]] && mode=" mode=async ps_pull_ahead=true"
          printf 'bench=scaling model=%s strategy=%s%s compression=%s workers=%d ps=%d link_gbps=%s batch=%d ours_images_per_s=%.0f efficiency=%.2f bound_images_per_s=%.0f of_bound=%.2f peer=torch_ddp peer_images_per_s=%s ratio=%s single_host_images_per_s=%.0f cpus_per_host=%s cpu_bound_images_per_s=%.0f of_cpu_bound=%.2f\n' \
            "$model" "$sname" "$mode" "$comp" "$workers" "$servers" "$link" "$batch" "$ours" "$eff" "$b" \
            "$(calc "$ours / $b")" "$peer_rate" "$ratio" "$single" "$host_cpus" "$cb" "$(calc "$ours / $cb")"
          printf '%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$strat" "$workers" \
            "$servers" "$link" "$batch" "$ours" "$b" "$peer_rate" "$single" "$host_cpus" "$rate_mbit" >> "$tsv"
        done
      done
    done
    "$emu" down --name $name
  done
done
# The planner against every point just measured (bench=plan lines).
bash "$here/bench/plan_check.sh" "$build" "$tsv"
