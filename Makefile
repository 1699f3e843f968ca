# Allot: top-level entry points. `make run` and `make test` do all the set-up
# on a fresh Debian 12 machine (as root): they install what they need first.
SHELL := /bin/bash
BUILD ?= build
BUILD_ASAN ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DALLOT_WERROR=ON
endif
DEBS := build-essential cmake ninja-build ccache pkg-config \
        libgtest-dev libgmock-dev libbenchmark-dev libyaml-cpp-dev \
        libboost1.81-dev libboost-json1.81-dev libsqlite3-dev libssl-dev \
        libcli11-dev openssl prometheus-cpp-dev prometheus \
        nodejs chromium systemd runc umoci skopeo busybox-static docker-registry \
        apache2-utils jupyter-notebook python3-ipykernel
# Only the fuzzing build (make fuzz, make fuzz-smoke) needs Clang.
FUZZ_DEBS := clang-16 libclang-rt-16-dev
EXAMPLE ?= examples/demo.yaml

.PHONY: deps web-deps build build-asan test test-unit test-asan run dry-run bench format clean

deps:
	@$(call apt-install,$(DEBS))
	@$(MAKE) --no-print-directory web-deps

# The dashboard's front-end packages (uPlot; playwright-core for its browser
# test), from web/package-lock.json; skipped when already installed.
web-deps:
	@command -v npm > /dev/null || { export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq npm; }
	@if [ ! -f web/node_modules/.package-lock.json ] || \
	    [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then \
	  cd web && npm ci --no-audit --no-fund; \
	fi

fuzz-deps:
	@$(call apt-install,$(FUZZ_DEBS))

# Installs the Debian packages of $(1) that are missing; quick when none is.
define apt-install
	missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq $$missing; \
	fi
endef

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_ASAN)/build.ninja:
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DALLOT_SANITIZE=ON \
	  -DALLOT_BUILD_BENCH=OFF $(CMAKE_FLAGS)

build-asan: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS)

# Every test, in the release build and again under ASan + UBSan (both replay
# the fuzz seeds and reproducers: tests/fuzz/README.md). The fuzzing build
# itself (make fuzz-smoke, make fuzz) is not part of it: a third, Clang,
# build does not fit CI's 90 minutes on 2 cores.
test: test-unit test-asan

# The embedded default: server + this machine's agent, with the demo.
run: build
	$(BUILD)/allot up --demo

# The offline scheduler on an example file.
dry-run: build
	$(BUILD)/allot schedule --dry-run -f $(EXAMPLE)

bench: build
	$(BUILD)/allot_bench all --scale 1
	$(BUILD)/allot_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
	BUILD=$(BUILD) bench/server_bench.sh

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

# ---- Fuzzing (libFuzzer, Clang): tests/fuzz/README.md ------------------------
# fuzz-smoke: build the fuzzers and run each on FUZZ_SMOKE_RUNS inputs
# (seed 1) from a fresh copy of its seed corpus. fuzz: run each FUZZ_SECONDS, keeping what it
# learns in $(BUILD_FUZZ)/corpus across runs (make fuzz FUZZ_SECONDS=3600).
# A crash stops the run; the reproducer is $(BUILD_FUZZ)/artifacts/NAME-crash-*
# (replay: $(BUILD_FUZZ)/allot_NAME_fuzz FILE).
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 600
# The smoke run is deterministic: a fixed seed and a fixed number of inputs.
# (`make test` fuzzes without libFuzzer instead: ctest fuzz_mutate_*.)
FUZZ_SMOKE_RUNS ?= 20000
FUZZERS := manifest request
FUZZ_FLAGS ?=
# Clang 16: Clang 14 (Debian's default `clang`) cannot capture structured
# bindings in lambdas, which src/ uses (C++20).
FUZZ_CC ?= clang-16
FUZZ_CXX ?= clang++-16
# A blow-up is a crash: each fuzzer runs under this memory cap (libFuzzer's
# -rss_limit_mb and -malloc_limit_mb).
FUZZ_RSS_MB ?= 1024
# 1: skip inputs of the open findings in tests/fuzz/crashes/README.md.
FUZZ_SKIP_KNOWN ?= 1

.PHONY: build-fuzz fuzz-smoke fuzz fuzz-deps

$(BUILD_FUZZ)/build.ninja:
	CC=$(FUZZ_CC) CXX=$(FUZZ_CXX) cmake -S . -B $(BUILD_FUZZ) -G Ninja \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
	  -DALLOT_FUZZ=ON -DALLOT_BUILD_TESTS=OFF -DALLOT_BUILD_BENCH=OFF

build-fuzz: deps fuzz-deps $(BUILD_FUZZ)/build.ninja
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target allot_fuzzers

# $(1): libFuzzer's limit for each fuzzer (-max_total_time=S or -runs=N
# -seed=K); $(2): "fresh" to start from a copy of the seeds.
# The committed corpus is never written; the log is $(BUILD_FUZZ)/NAME.log.
define run-fuzzers
	@set -e; for f in $(FUZZERS); do \
	  dir=$(BUILD_FUZZ)/corpus/$$f; log=$(BUILD_FUZZ)/$$f.log; \
	  if [ "$(2)" = fresh ]; then rm -rf $$dir; fi; \
	  mkdir -p $$dir $(BUILD_FUZZ)/artifacts; \
	  cp tests/fuzz/corpus/$$f/* $$dir/; \
	  echo "== fuzzing $$f with $(1) (log: $$log)"; \
	  if ALLOT_FUZZ_SKIP_KNOWN=$(FUZZ_SKIP_KNOWN) $(BUILD_FUZZ)/allot_$${f}_fuzz $$dir $(1) -timeout=30 \
	       -rss_limit_mb=$(FUZZ_RSS_MB) -malloc_limit_mb=$(FUZZ_RSS_MB) -dict=tests/fuzz/allot.dict -print_final_stats=1 \
	       -artifact_prefix=$(BUILD_FUZZ)/artifacts/$$f- $(FUZZ_FLAGS) >$$log 2>&1; then \
	    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' $$log; \
	  else \
	    tail -n 80 $$log; echo "== $$f FAILED: reproducer in $(BUILD_FUZZ)/artifacts/"; exit 1; \
	  fi; \
	done
endef

fuzz-smoke: build-fuzz
	$(call run-fuzzers,-runs=$(FUZZ_SMOKE_RUNS) -seed=1,fresh)

fuzz: build-fuzz
	$(call run-fuzzers,-max_total_time=$(FUZZ_SECONDS),keep)
