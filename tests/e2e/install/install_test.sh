#!/bin/sh
# Installs the build into a temporary prefix, builds examples/cpp against the installed tree
# as an outside project (find_package(Tributary)), and runs the example for a few steps: the
# package must carry every header and dependency that a user program needs.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER GENERATOR [COMPILER_LAUNCHER]
set -eu
build=$1 source=$2 cxx=$3 generator=$4 launcher=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
# The package holds the public headers only, never the internals of src/.
test -f "$tmp/prefix/include/trib/train/model_graph.h"
test -f "$tmp/prefix/lib/cmake/Tributary/TributaryConfig.cmake"
test -f "$tmp/prefix/lib/cmake/Tributary/TributaryConfigVersion.cmake"
test -x "$tmp/prefix/bin/trib"
if [ -e "$tmp/prefix/include/trib/app/cli.h" ]; then echo "internal header trib/app/cli.h was installed"; exit 1; fi

# The example is configured from a copy, so the source tree gets no build output.
cp -r "$source/examples/cpp" "$tmp/example"
cmake -S "$tmp/example" -B "$tmp/example-build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/example-build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }

# One epoch of 20 steps, then the test-set evaluation.
"$tmp/example-build/train_mlp" 1 20 | tee "$tmp/run.log"
grep -q '^epoch 1: test accuracy' "$tmp/run.log"
