# Spool's two commands (see README):
#   make run   (also plain `make`)  install dependencies, build, run the main job (the order-service
#                                   pipeline, examples/order_service) on sqlite:spool.db
#   make test                       install dependencies, build everything, run every test; then build
#                                   again under AddressSanitizer + UBSan and run the tests there too
#                                   (SANITIZE=0 skips that second pass), then the runtime and
#                                   concurrency suites under ThreadSanitizer (TSAN=0 skips it), then
#                                   each fuzz target for FUZZ_SECONDS (FUZZ=0 skips that)
# Also: make deps | build | fuzz | test-tsan | clean. JOBS=N sets the parallelism (default 2, the machine's cores).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= 2
SANITIZE   ?= 1
TSAN       ?= 1
FUZZ       ?= 1
FUZZ_SECONDS ?= 20
FUZZ_DIR   ?= build-fuzz

# ccache hits across clones (CI builds a fresh clone in another folder):
# paths under the project become relative, and the folder is not hashed.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.DEFAULT_GOAL := run
.PHONY: run test deps configure build test-asan fuzz test-tsan clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

run: build
	./$(BUILD_DIR)/examples/order_service --db sqlite:spool.db

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)
ifeq ($(SANITIZE),1)
	$(MAKE) --no-print-directory test-asan
endif
ifeq ($(TSAN),1)
	$(MAKE) --no-print-directory test-tsan
endif
ifeq ($(FUZZ),1)
	$(MAKE) --no-print-directory fuzz
endif

# The sanitizer pass: library, CLI and tests only (no benchmarks or examples). The install test is
# left out: it builds its own non-sanitized copy of the library and the main pass already ran it.
test-asan: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSPOOL_SANITIZE=ON \
	  -DSPOOL_BUILD_BENCH=OFF -DSPOOL_BUILD_EXAMPLES=OFF
	cmake --build $(ASAN_DIR) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j$(JOBS) -E install_consumer_project

# The libFuzzer targets of fuzz/ (clang, ASan + UBSan, in build-fuzz), each for FUZZ_SECONDS on a copy of
# its committed corpus; fails on any finding (see docs/SECURITY.md, Fuzzing).
fuzz: deps
	JOBS=$(JOBS) SPOOL_FUZZ_BUILD_DIR=$(CURDIR)/$(FUZZ_DIR) bash fuzz/run.sh $(FUZZ_SECONDS)

# ThreadSanitizer over the runtime and concurrency suites: the three capabilities' conformance
# tests on both engines (the queues, the worker pool, the store, the relay and its sinks).
TSAN_DIR ?= build-tsan
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_CXX_FLAGS=-fsanitize=thread \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
	  -DSPOOL_BUILD_BENCH=OFF -DSPOOL_BUILD_EXAMPLES=OFF
	cmake --build $(TSAN_DIR) -j$(JOBS) --target spool_cli mq_conformance_tests ops_conformance_tests outbox_conformance_tests
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_DIR) --output-on-failure -j$(JOBS) \
	  -R 'pg_server|mq_conformance|ops_conformance|outbox_conformance'

clean:
	@for d in $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR); do \
	  if [[ -x tests/support/pg_server.sh && -d $$d/tests/pg ]]; then tests/support/pg_server.sh stop $$d/tests/pg >/dev/null || true; fi; \
	done
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
