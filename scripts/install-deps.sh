#!/usr/bin/env bash
# Installs every Debian 12 package Tributary needs to build, test and benchmark.
# Idempotent: packages already present are skipped, so `make` can call it every time.
set -euo pipefail

packages=(
  build-essential cmake ninja-build clang pkg-config
  libdnnl-dev librdkafka-dev libssl-dev libyaml-cpp-dev libcli11-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  # cluster.store: etcd://...: libcurl for etcd's JSON gateway; etcd-server for its tests.
  libcurl4-openssl-dev etcd-server
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist kcat iperf3 iproute2
  python3 python3-torch openmpi-bin libopenmpi-dev
  # The benchmark's PyTorch peer at its best: torch only recommends an optimised BLAS, and
  # without one (--no-install-recommends) it falls back to reference BLAS, 20x slower.
  libopenblas0-pthread
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
