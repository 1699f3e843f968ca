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
        libcli11-dev openssl
EXAMPLE ?= examples/demo.yaml

.PHONY: deps build build-asan test test-unit test-asan run bench format clean

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq $$missing; \
	fi

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

# Every test, in the release build and again under ASan + UBSan.
test: test-unit test-asan

run: build
	$(BUILD)/allot schedule --dry-run -f $(EXAMPLE)

bench: build
	$(BUILD)/allot_bench all --scale 1
	$(BUILD)/allot_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
