# Every target does its own set-up on a fresh Debian 12 machine (as root, or with sudo).
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= examples/fashion_ps.yaml

.PHONY: all deps configure build train test bench clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > $(BUILD).configure.log 2>&1 || \
	  (cat $(BUILD).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: trains the default example and prints its progress and final accuracy.
train: build
	$(BUILD)/bin/trib train $(CONFIG)

# Every test, labelled unit / integration / e2e (run one tier with: ctest -L unit).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# One bench=... line per measurement, ours beside the peer's from the same run.
bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
