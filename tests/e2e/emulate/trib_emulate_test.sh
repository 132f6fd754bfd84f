#!/usr/bin/env bash
# scripts/trib-emulate: hosts get their addresses, environment, CPU cap and shaped links;
# hosts reach each other and nothing else; bad input fails with one line;
# a killed `run` removes every namespace and cgroup it made; a delay without the kernel's
# netem goes through trib-netem. Skipped (exit 0) without root.
# Usage: trib_emulate_test.sh SOURCE_DIR [TRIB_NETEM]
set -u
emu=$1/scripts/trib-emulate
netem=${2:-}
name=t$$
name=${name:0:8}
fail() { echo "FAIL: $*"; "$emu" down --name "$name" >/dev/null 2>&1; exit 1; }
if ((EUID != 0)) || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "skipping: needs root, ip and tc"; exit 0
fi

# Bad input: one line naming the option and what was expected.
out=$("$emu" up --name "$name" --hosts 0 2>&1) && fail "--hosts 0 was accepted"
[[ $out == *"--hosts 0: expected 1..250"* ]] || fail "--hosts 0 said: $out"
out=$("$emu" up --name "$name" --hosts 2 --rate fast 2>&1) && fail "--rate fast was accepted"
[[ $out == *"--rate fast: expected a tc rate"* ]] || fail "--rate fast said: $out"
out=$("$emu" up --name "$name" --hosts 2 --host-cpus 2=0.5 2>&1) && fail "--host-cpus 2=0.5 was accepted"
[[ $out == *"--host-cpus 2=0.5: expected HOST=CORES with HOST in 0..1"* ]] || fail "--host-cpus 2=0.5 said: $out"
out=$("$emu" up --name "$name" --hosts 2 --weight 0 2>&1) && fail "--weight 0 was accepted"
[[ $out == *"--weight 0: expected 1..10000"* ]] || fail "--weight 0 said: $out"
out=$("$emu" up --name "$name" --hosts 2 --period-us 10 2>&1) && fail "--period-us 10 was accepted"
[[ $out == *"--period-us 10: expected 1000..1000000"* ]] || fail "--period-us 10 said: $out"
out=$("$emu" up --name "$name" --hosts 2 --rate fast 2>&1) && fail "--rate fast was accepted"
[[ $out == *"--rate fast: expected a tc rate"* ]] || fail "--rate fast said: $out"
out=$("$emu" exec --name "$name" 0 -- true 2>&1) && fail "exec with no cluster up succeeded"
[[ $out == *"no emulated cluster named $name is up"* ]] || fail "exec said: $out"

"$emu" up --name "$name" --hosts 3 --cpus 0.3 --host-cpus 0=0.5 --rate 100mbit || fail "up"
out=$("$emu" up --name "$name" --hosts 3 2>&1) && fail "a second up under the same name succeeded"
[[ $("$emu" addr --name "$name" 2) == 10.77.0.3 ]] || fail "host 2's address"
env_line=$("$emu" exec --name "$name" 1 -- sh -c 'echo $EMU_HOST $EMU_ADDR $EMU_HOSTS')
[[ $env_line == "1 10.77.0.2 3" ]] || fail "host 1's environment: $env_line"
# The host's own address is on its eth0, shaped by tbf at the rate asked for.
"$emu" exec --name "$name" 1 -- ip -o addr show dev eth0 | grep -q "10.77.0.2/16" || fail "host 1's eth0"
"$emu" exec --name "$name" 1 -- tc qdisc show dev eth0 | grep -q "rate 100Mbit" || fail "host 1's link is not shaped"
# The CPU cap: the command runs inside its host's cgroup, with a quota of 0.3 core.
cg=$("$emu" exec --name "$name" 2 -- cat /proc/self/cgroup | grep -E ':cpu(,|:)|^0::' | head -1 | cut -d: -f3)
[[ $cg == */trib-emulate/$name/h2 ]] || fail "host 2's cgroup: $cg"
# 0.3 of the default 10 ms period.
if [[ -f /sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us ]]; then
  quota="$(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us") $(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_period_us")"
else
  quota=$(cat "/sys/fs/cgroup$cg/cpu.max")
fi
[[ $quota == "3000 10000" ]] || fail "host 2's quota and period: $quota"
# Hosts reach each other (refused: nothing listens, but host 0 answered), and a host has no
# route out of the emulated network (nothing is sent anywhere else).
out=$("$emu" exec --name "$name" 1 -- bash -c 'exec 3<>/dev/tcp/10.77.0.1/9' 2>&1)
[[ $out == *"refused"* ]] || fail "host 1 cannot reach host 0: $out"
"$emu" exec --name "$name" 1 -- ip route get 192.0.2.1 >/dev/null 2>&1 && fail "host 1 has a route out"
"$emu" down --name "$name" || fail "down"
ip netns list | grep -q "^$name-" && fail "namespaces left after down"

# run: every host runs the command with RANK/WORLD_SIZE/MASTER_ADDR; a TERM tears all down.
out=$("$emu" run --name "$name" --hosts 2 --cpus 0.2 --port 29511 -- sh -c 'echo "rank $RANK of $WORLD_SIZE master $MASTER_ADDR:$MASTER_PORT"' 2>/dev/null | sort)
[[ $out == $'rank 0 of 2 master 10.77.0.1:29511\nrank 1 of 2 master 10.77.0.1:29511' ]] || fail "run printed: $out"
"$emu" run --name "$name" --hosts 2 --cpus 0.2 -- sleep 300 2>/dev/null &
runner=$!
for _ in $(seq 1 100); do [[ -e /run/trib-emulate/$name ]] && "$emu" status --name "$name" 2>/dev/null | grep -q "processes: [1-9]" && break; sleep 0.1; done
kill -TERM "$runner"
wait "$runner"
[[ $? == 130 ]] || fail "run did not exit 130 after TERM"
ip netns list | grep -q "^$name-" && fail "namespaces left after a killed run"
[[ -e /run/trib-emulate/$name ]] && fail "state left after a killed run"
ls -d /sys/fs/cgroup/cpu/trib-emulate/"$name" /sys/fs/cgroup/trib-emulate/"$name" 2>/dev/null && fail "cgroups left"
# A one-way delay of 40 ms: a connection attempt between two hosts (SYN, then the refusal)
# takes a round trip, at least 80 ms. Where the kernel has no netem, trib-netem does it, and
# down stops it.
if [[ -n $netem ]] && command -v iptables >/dev/null; then
  TRIB_NETEM=$netem "$emu" up --name "$name" --hosts 2 --cpus 0.3 --rate 100mbit --delay 40ms 2>/dev/null || fail "up --delay"
  rtt_ms=$("$emu" exec --name "$name" 1 -- bash -c 's=$(date +%s%N); exec 3<>/dev/tcp/10.77.0.1/9 2>/dev/null; echo $((($(date +%s%N) - s) / 1000000))')
  ((rtt_ms >= 80)) || fail "a round trip over links delayed 40 ms each way took $rtt_ms ms"
  "$emu" down --name "$name" 2>/dev/null || fail "down after --delay"
  pgrep -f "$netem --queue" >/dev/null && fail "trib-netem left running after down"
fi
echo "PASS"
