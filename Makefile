# Spool's two commands (see README):
#   make run   (also plain `make`)  install dependencies, build only what the main job needs (the
#                                   library, the CLI and examples/order_service), run the main job
#                                   (the order-service pipeline) on sqlite:spool.db
#   make test                       install dependencies, build, and pass every test, once each:
#                                   every suite under AddressSanitizer + UBSan (one build with the
#                                   tests, examples and benchmarks), the install test on the plain
#                                   build of `make run`, the runtime and concurrency suites under
#                                   ThreadSanitizer (TSAN=0 skips), then each fuzz target for
#                                   FUZZ_SECONDS (FUZZ=0 skips); prints each stage's time at the end.
#                                   SANITIZE=0 runs the suites on a plain build instead.
# Also: make soak (the chaos and faults suites SOAK_RUNS times in a row, fresh seeds each time),
#       make deps | build | fuzz | test-tsan | clean. JOBS=N sets the build parallelism (default 2,
#       the machine's cores).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
TSAN_DIR   ?= build-tsan
FUZZ_DIR   ?= build-fuzz
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= 2
SANITIZE   ?= 1
TSAN       ?= 1
FUZZ       ?= 1
FUZZ_SECONDS ?= 20
SOAK_RUNS  ?= 10

# ccache hits across clones (CI builds a fresh clone in another folder):
# paths under the project become relative, and the folder is not hashed.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
# Precompiled headers: ccache may reuse results that depend on them.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

# Where the suites run: the sanitized tree, or the plain one with SANITIZE=0.
ifeq ($(SANITIZE),1)
SUITE_DIR := $(ASAN_DIR)
# -Og -g1: a quarter of the compile time of -O2 -g under ASan+UBSan, line numbers in every report.
SUITE_FLAGS := -DSPOOL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-Og -g1 -DNDEBUG"
SUITE_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SUITE_NAME := ASan+UBSan
else
SUITE_DIR := $(BUILD_DIR)-all
SUITE_FLAGS :=
SUITE_ENV :=
SUITE_NAME := plain
endif

.DEFAULT_GOAL := run
.PHONY: run test deps configure build suites test-asan fuzz test-tsan soak clean

deps:
	@bash scripts/install-deps.sh

# What builds and runs Spool, without the test clients (browsers, AWS CLIs).
.PHONY: build-deps
build-deps:
	@bash scripts/install-deps.sh --build

configure: build-deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

# Only the main job's targets: tests, benchmarks and fuzzers are built by `make test`.
build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target spool_cli order_service

run: build
	./$(BUILD_DIR)/examples/order_service --db sqlite:spool.db

# The stages, their order and what runs in the background: scripts/make_test.sh.
test:
	@JOBS=$(JOBS) SANITIZE=$(SANITIZE) TSAN=$(TSAN) FUZZ=$(FUZZ) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  BUILD_DIR=$(BUILD_DIR) bash scripts/make_test.sh

# Every suite once, in one tree: unit, conformance on both engines, CLI, chaos, faults, hostile,
# the main job, the benchmark smoke runs. The install test runs on the plain tree instead (it
# installs that build).
.PHONY: suites-build
suites-build: deps
	cmake -S . -B $(SUITE_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(SUITE_FLAGS) >/dev/null
	cmake --build $(SUITE_DIR) -j$(JOBS)

suites:
	$(SUITE_ENV) ctest --test-dir $(SUITE_DIR) --output-on-failure -j$(JOBS) -E '^install_consumer_project$$'

test-asan: suites-build suites

# The libFuzzer targets of fuzz/ (clang, ASan + UBSan, in build-fuzz), each for FUZZ_SECONDS on a copy of
# its committed corpus; fails on any finding (see docs/SECURITY.md, Fuzzing).
fuzz: deps
	JOBS=$(JOBS) SPOOL_FUZZ_BUILD_DIR=$(CURDIR)/$(FUZZ_DIR) bash fuzz/run.sh $(FUZZ_SECONDS)

.PHONY: fuzz-build fuzz-run
fuzz-build: deps
	JOBS=$(JOBS) SPOOL_FUZZ_BUILD_DIR=$(CURDIR)/$(FUZZ_DIR) bash fuzz/run.sh build

fuzz-run:
	SPOOL_FUZZ_BUILD_DIR=$(CURDIR)/$(FUZZ_DIR) bash fuzz/run.sh run $(FUZZ_SECONDS)

# ThreadSanitizer over the runtime and concurrency suites: the three capabilities' conformance
# tests on both engines (the queues, the worker pool, the store, the relay and its sinks).
.PHONY: tsan-build tsan-suites
tsan-build: deps
	cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1 -DNDEBUG" \
	  -DCMAKE_CXX_FLAGS=-fsanitize=thread \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
	  -DSPOOL_BUILD_BENCH=OFF -DSPOOL_BUILD_EXAMPLES=OFF >/dev/null
	cmake --build $(TSAN_DIR) -j$(JOBS) --target spool_cli mq_conformance_tests ops_conformance_tests outbox_conformance_tests

tsan-suites:
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_DIR) --output-on-failure -j$(JOBS) \
	  -R 'pg_server|mq_conformance|ops_conformance|outbox_conformance'

test-tsan: tsan-build tsan-suites

# The crash and fault suites SOAK_RUNS times in a row on the plain build, both engines, a fresh
# seed each run; every run's seeds and verdicts go to $(BUILD_DIR)/soak/summary.txt.
soak: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target spool_cli chaos_tests spool_chaos_actor faults_tests spool_outbox_claimer
	bash scripts/soak.sh $(BUILD_DIR) $(SOAK_RUNS)

clean:
	@for d in $(BUILD_DIR) $(BUILD_DIR)-all $(ASAN_DIR) $(TSAN_DIR); do \
	  if [[ -x tests/support/pg_server.sh && -d $$d/tests/pg ]]; then tests/support/pg_server.sh stop $$d/tests/pg >/dev/null || true; fi; \
	done
	rm -rf $(BUILD_DIR) $(BUILD_DIR)-all $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR) .stage-times.tsv .stage-logs
