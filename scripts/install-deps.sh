#!/usr/bin/env bash
# Installs the Debian 12 packages that a task needs, and only those:
#   scripts/install-deps.sh [SET...]      SET: build (the default), data, test, bench
#   scripts/install-deps.sh --list SET... prints the packages, one a line, and installs nothing
# `make train` takes build and data, `make test` build, data and test, `make bench` build and
# bench. Idempotent: packages already present are skipped, so `make` can call it every time.
set -euo pipefail

# The compiler, CMake and the libraries every target links. (libspdlog-dev: the top-level
# CMakeLists.txt requires it.) clang is not here: the normal build uses gcc, and .ci/run
# installs clang-16 for the fuzz target itself.
build=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev librdkafka-dev libssl-dev libyaml-cpp-dev libcli11-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  # cluster.store: etcd://...: libcurl for etcd's JSON gateway.
  libcurl4-openssl-dev
  # trib export: ONNX's generated protobuf classes (libonnx-dev ships onnx-ml.pb.h and
  # libonnx_proto); TensorBoard's tfevents files: Event protos generated at build time.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # trib serve, each role's /metrics and the dashboard: HTTP (cpp-httplib, a small library).
  libcpp-httplib-dev
  # trib plot --output F.png: librsvg rasterizes the SVG it draws onto cairo (pulls libcairo2-dev).
  librsvg2-dev
  # The tributary Python package (python/, `make python`): pybind11 and the headers of
  # Debian's python3, and numpy, which the package takes and returns arrays of.
  pybind11-dev python3-dev python3-numpy
  # trib-netem (tools/netem): delay and loss for emulated links where the kernel has no netem.
  libnetfilter-queue-dev
)
# What the examples and the tests train on.
data=(dataset-fashion-mnist)
# The tests: GoogleTest, and the programs tests run: kcat (an external Kafka client against
# the built-in broker), ip (iproute2: hosts in network namespaces), mpirun (a `trib node`
# launch). Tests that find one absent skip with a line saying so.
# python3-onnx, python3-numpy: the export test's checker and its NumPy evaluation of the graph.
# prometheus: its promtool checks the metrics endpoints' text format (about 100 MB installed,
# 12 packages with --no-install-recommends; the server itself is not run). python3-protobuf:
# an independent reader of the tfevents files. chromium: the dashboard in a headless browser
# (the largest: about 350 MB installed, 15 packages). python3-pytest runs the Python
# package's tests (python/tests). python3-png (pypng, pure Python): an independent decoder of
# `trib plot`'s PNGs. iptables: the bad-network test (RELIABILITY.md row 6) queues a host's
# packets to trib-netem and cuts its link.
test=(libgtest-dev libgmock-dev kcat iproute2 openmpi-bin etcd-server python3-onnx python3-numpy prometheus python3
  python3-protobuf chromium python3-pytest python3-png iptables)
# The benchmarks' peers, run beside ours in the same run: PyTorch (engine, PS and allreduce
# training), Open MPI (allreduce; mpicc builds the peer), iperf3 (PS wire speed), kcat
# (stream ingest). libopenblas0-pthread: PyTorch at its best; torch only recommends an
# optimised BLAS, and without one (--no-install-recommends) it falls back to reference
# BLAS, 20x slower.
bench=(python3 python3-torch libopenblas0-pthread openmpi-bin libopenmpi-dev iperf3 kcat)

list=0
if [ "${1:-}" = "--list" ]; then
  list=1
  shift
fi
[ $# -gt 0 ] || set -- build

packages=()
for set in "$@"; do
  case $set in
    build) packages+=("${build[@]}") ;;
    data) packages+=("${data[@]}") ;;
    test) packages+=("${test[@]}") ;;
    bench) packages+=("${bench[@]}") ;;
    *) echo "install-deps: unknown set '$set'; expected build, data, test or bench" >&2; exit 2 ;;
  esac
done
if [ $list -eq 1 ]; then
  printf '%s\n' "${packages[@]}" | awk '!seen[$0]++'
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')

echo "install-deps ($*): installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
