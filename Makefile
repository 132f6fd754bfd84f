# Every target does its own set-up on a fresh Debian 12 machine (as root, or with sudo), and
# installs only what it needs (scripts/install-deps.sh has the package sets).
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= examples/fashion_ps.yaml
DEPS := bash scripts/install-deps.sh

.PHONY: all deps configure build train test bench python clean

all: build

# Everything: what building, training, testing and benchmarking need.
deps:
	@$(DEPS) build data test bench

# $(call configure,BUILD_TESTING): a fresh build directory is configured with the tests on or
# off; an existing one is configured again only to turn them on (a build that has the tests
# can still train).
define configure
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ "$(1)" = ON ]; then \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=$(1) > $(BUILD).configure.log 2>&1 || \
	    (cat $(BUILD).configure.log; exit 1); \
	fi
endef

configure:
	@$(DEPS) build test
	$(call configure,ON)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: trains the default example and prints its progress and final accuracy.
train:
	@$(DEPS) build data
	$(call configure,OFF)
	@cmake --build $(BUILD) -j $(JOBS) --target trib
	$(BUILD)/bin/trib train $(CONFIG)

# The tributary Python package (and the trib program it runs for local clusters), importable
# with PYTHONPATH=$(BUILD)/python; `cmake --install $(BUILD)` installs it (docs/python.md).
python:
	@$(DEPS) build
	$(call configure,OFF)
	@cmake -S . -B $(BUILD) -DTRIB_PYTHON=ON > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)
	@cmake --build $(BUILD) -j $(JOBS) --target python

# Every test, labelled unit / integration / e2e (run one tier with: ctest -L unit).
test:
	@$(DEPS) build data test
	$(call configure,ON)
	@cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# One bench=... line per measurement, ours beside the peer's from the same run.
bench:
	@$(DEPS) build bench
	$(call configure,OFF)
	@cmake --build $(BUILD) -j $(JOBS)
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
