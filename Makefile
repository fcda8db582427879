# Steadfast - build, test, bench, fuzz and demo entry points.
#
# Sources are found by wildcard: every src/<module>/*.c and election/*.c goes
# into libsteadfast.a (src/cli/*.c, the program, into build/steadfast), every test/unit/*.c into one criterion binary, every
# test/integration/*.c into another, every test/model/*.c (the model checker) into a third. `make help` lists the targets.

SHELL := /bin/bash
CC ?= cc
O ?= build
PKGS := libcurl yajl yaml-0.1 gnutls libuv
TEST_PKGS := criterion

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wformat=2 -Wno-format-nonliteral
override CPPFLAGS += -Iinclude -D_GNU_SOURCE
CFLAGS ?= -O2 -g
override CFLAGS += -std=c11 $(WARN) -fno-strict-aliasing
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

# src/cli/ is the program (main and its commands); the rest is the library.
MAIN_SRC := $(sort $(wildcard src/cli/*.c))
LIB_SRCS := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)) $(wildcard election/*.c))
UNIT_SRCS := $(sort $(wildcard test/unit/*.c))
INTEG_SRCS := $(sort $(wildcard test/integration/*.c))
MODEL_SRCS := $(sort $(wildcard test/model/*.c))
TESTLIB_SRCS := $(sort $(wildcard test/lib/*.c))
FUZZ_SRCS := $(sort $(wildcard test/fuzz/fuzz_*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(O)/%.o)
TESTLIB_OBJS := $(TESTLIB_SRCS:%.c=$(O)/%.o)
LIB := $(O)/libsteadfast.a
BIN := $(O)/steadfast
UNIT_BIN := $(O)/test/unit-tests
INTEG_BIN := $(O)/test/integration-tests
MODEL_BIN := $(O)/test/model-tests
# The phase machine (src/appwrapper/phase*.c) once more, with the seeded
# mutations the model checker must catch (awphase.h, SF_AWP_MUTANTS); linked
# before $(LIB), so it wins there. The shipped library has none.
MODEL_PHASE := $(patsubst src/appwrapper/%.c,$(O)/model-obj/%.o,$(wildcard src/appwrapper/phase*.c))
# The controller with its fault points live (test/shim/faults.c): only the
# fault-injection tests start it; the shipped $(BIN) reads no fault settings.
FAULT_BIN := $(O)/test/steadfast-faults
DEPS_STAMP := $(O)/.deps-ok

CLUSTER_DIR ?= $(CURDIR)/.cluster
JOBS ?= 2

.PHONY: all deps test unit model model-large integration bench fuzz fuzz-build asan lint format \
	cluster-up cluster-down cluster-build demo clean help tidy-check image install

all: $(BIN)

help:
	@echo "make            build $(BIN)"
	@echo "make deps       install missing Debian packages (and Go if absent)"
	@echo "make test       everything CI runs: build, unit, integration, fuzz regressions"
	@echo "make unit       unit tests (no network)"
	@echo "make model      model checker of the AppWrapper phase machine, small bound (part of make test)"
	@echo "make model-large  the same with the larger bound (minutes)"
	@echo "make integration  tests against a real local control plane"
	@echo "make upgrade    upgrade from the upstream controller (v1.2.1, v1.2.2) and rollback (21 min; 5 more for the first build)"
	@echo "make asan       ASan+UBSan build running unit and integration tests"
	@echo "make fuzz       run each fuzz target for FUZZ_SECONDS (default 60)"
	@echo "make bench      benchmarks; writes docs/benchmarks.md"
	@echo "make lint       clang-format check and cppcheck"
	@echo "make cluster-up / cluster-down   local control plane in .cluster/"
	@echo "make demo       control plane with Kueue and kwok, three replicas, waves, a failover"
	@echo "make image      the controller image from the Containerfile (podman; IMAGE=name:tag)"
	@echo "make install    $(BIN) to \$$DESTDIR\$$PREFIX/bin (/usr/local/bin), with the kubectl plugin link"

# --- dependencies -----------------------------------------------------------
$(DEPS_STAMP): tools/deps.sh
	@tools/deps.sh
	@mkdir -p $(O) && touch $@

deps:
	@tools/deps.sh
	@mkdir -p $(O) && touch $(DEPS_STAMP)

# --- build ------------------------------------------------------------------
$(O)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

$(O)/test/%.o: test/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itest/lib $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(MAIN_SRC:%.c=$(O)/%.o) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(FAULT_BIN): $(MAIN_SRC:%.c=$(O)/%.o) $(O)/test/shim/faults.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(UNIT_BIN): $(UNIT_SRCS:%.c=$(O)/%.o) $(TESTLIB_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS)

$(INTEG_BIN): $(INTEG_SRCS:%.c=$(O)/%.o) $(TESTLIB_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS)

$(MODEL_PHASE): $(O)/model-obj/%.o: src/appwrapper/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSF_AWP_MUTANTS $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

$(O)/test/model/%.o: test/model/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSF_AWP_MUTANTS $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(MODEL_BIN): $(MODEL_SRCS:%.c=$(O)/%.o) $(MODEL_PHASE) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS)

-include $(shell find $(O) -name '*.d' 2>/dev/null)

# --- install ----------------------------------------------------------------
# kubectl-steadfast makes the binary a kubectl plugin: `kubectl steadfast
# lease status` runs it (it behaves the same under either name).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
install: $(BIN)
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/steadfast
	ln -sf steadfast $(DESTDIR)$(BINDIR)/kubectl-steadfast

# --- image ------------------------------------------------------------------
VERSION := $(shell sed -n 's/^\#define SF_VERSION "\(.*\)"/\1/p' include/steadfast/client.h)
IMAGE ?= localhost/steadfast:$(VERSION)
# Always runs: podman's layer cache makes an unchanged rebuild cheap, and
# it knows better than make which inputs changed.
image: $(DEPS_STAMP)
	@tools/image.sh $(IMAGE)

# --- tests ------------------------------------------------------------------
unit: $(UNIT_BIN)
	@RESULTS=$(O)/test-results tools/run-tests.sh unit $(UNIT_BIN) --jobs=$(JOBS) $(CRITERION_ARGS)

# The model checker (test/model/README.md): the unmutated phase machine and
# each seeded mutation, explored to the small bound; model-large explores
# the larger one (not part of make test).
model: $(MODEL_BIN)
	@RESULTS=$(O)/test-results tools/run-tests.sh model $(MODEL_BIN) --jobs=$(JOBS) $(CRITERION_ARGS)

model-large: $(MODEL_BIN)
	@STEADFAST_MODEL_BOUND=large RESULTS=$(O)/test-results tools/run-tests.sh model-large \
		$(MODEL_BIN) --jobs=$(JOBS) $(CRITERION_ARGS)

# Also kube-scheduler, Kueue and kwok (the kueue integration suite runs
# them) and the kubelet (the node suite's KUBELET=true up.sh): built here,
# before any test's timeout runs.
cluster-build: $(DEPS_STAMP)
	@KUBELET=true test/cluster/build.sh --kueue >/dev/null

cluster-up: cluster-build
	@test/cluster/up.sh $(CLUSTER_DIR)

cluster-down:
	@test/cluster/down.sh $(CLUSTER_DIR)

# Integration tests start their own control plane in a temp dir (and stop it
# whatever the outcome) unless STEADFAST_CLUSTER_ENV points at a running one;
# the kueue and node suites run beside the others (tools/integration.sh).
integration: $(INTEG_BIN) $(BIN) $(FAULT_BIN) cluster-build image
	@STEADFAST_BIN=$(BIN) STEADFAST_FAULT_BIN=$(FAULT_BIN) STEADFAST_IMAGE=$(IMAGE) RESULTS=$(O)/test-results tools/with-cluster.sh tools/integration.sh \
		$(INTEG_BIN) $(CRITERION_ARGS)

# The upgrade and rollback tests (test/integration/test_upgrade.c): the
# upstream controller v1.2.1 and v1.2.2 (built from its Go module by
# test/cluster/build.sh --upstream, cached; about 5 min cold) handing over
# to Steadfast and back, with and without Kueue and the webhooks, on a
# KUEUE=true control plane of their own. Not part of make test: 8 tests,
# two minutes of observation each, 21 min in all on the 2-core machine
# with everything built (make test's warm budget has no room for even one
# test of about 3 min); the handover times land in
# $(O)/test-results/upgrade-handover.tsv and are summarised at the end.
# STEADFAST_UPGRADE_OBSERVE_S shortens the observation (default 120).
.PHONY: upgrade upstream-build
upstream-build: $(DEPS_STAMP)
	@test/cluster/build.sh --upstream >/dev/null

upgrade: $(INTEG_BIN) $(BIN) cluster-build upstream-build
	@mkdir -p $(O)/test-results && rm -f $(O)/test-results/upgrade-handover.tsv
	@STEADFAST_BIN=$(BIN) RESULTS=$(O)/test-results tools/run-tests.sh upgrade \
		$(INTEG_BIN) --jobs=1 --filter 'upgrade/*' $(CRITERION_ARGS); rc=$$?; \
		tools/upgrade-handover.sh $(O)/test-results/upgrade-handover.tsv; exit $$rc

# The crash test's full matrix (test/integration/test_crash.c): every write
# of each lifecycle with every view of the standby; make test runs a slice.
# Writes $(O)/test-results/crash-matrix.md.
.PHONY: crash-matrix
crash-matrix: $(INTEG_BIN) $(BIN) $(FAULT_BIN) cluster-build
	@STEADFAST_CRASH_MATRIX=full STEADFAST_BIN=$(BIN) STEADFAST_FAULT_BIN=$(FAULT_BIN) RESULTS=$(O)/test-results tools/with-cluster.sh tools/run-tests.sh crash-matrix \
		$(INTEG_BIN) --jobs=1 --filter 'crash/*' $(CRITERION_ARGS)

# The same with the real Kueue (test/integration/test_kueue_crash.c, in the
# kueue suite: its own KUEUE=true control plane); make test runs a slice.
# Writes $(O)/test-results/crash-matrix-kueue.md.
.PHONY: crash-matrix-kueue
crash-matrix-kueue: $(INTEG_BIN) $(BIN) $(FAULT_BIN) cluster-build
	@STEADFAST_CRASH_MATRIX=full STEADFAST_BIN=$(BIN) STEADFAST_FAULT_BIN=$(FAULT_BIN) RESULTS=$(O)/test-results tools/run-tests.sh crash-matrix-kueue \
		$(INTEG_BIN) --jobs=1 --filter 'kueue/crash_*' $(CRITERION_ARGS)

test: all
	@rm -rf $(O)/test-results
	@$(MAKE) --no-print-directory unit model integration fuzz-regress
	@tools/summary.sh $(O)/test-results

# --- sanitizers, fuzzing, lint ----------------------------------------------
# STEADFAST_SANITIZED=1: the tests stop each controller with SIGTERM before
# SIGKILL and fail on a sanitizer report in its output (test/lib/tl_ctl.h).
asan:
	STEADFAST_SANITIZED=1 $(MAKE) O=build-asan CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" unit integration

FUZZ_SECONDS ?= 60
FUZZ_BINS := $(FUZZ_SRCS:test/fuzz/%.c=$(O)/fuzz/%)
# The library is compiled once with the fuzzer's instrumentation and every
# target links it.
FUZZ_CFLAGS := -std=c11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined
FUZZ_LIB := $(O)/fuzz/libsteadfast-fuzz.a
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(O)/fuzz-obj/%.o)
$(O)/fuzz-obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(O)/fuzz/%: test/fuzz/%.c $(FUZZ_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) \
		-o $@ $< $(FUZZ_LIB) $(PKG_LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@tools/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_BINS)

# Replays every kept corpus and crash input once (part of make test).
fuzz-regress: fuzz-build
	@tools/fuzz.sh regress 0 $(FUZZ_BINS)

lint:
	@tools/lint.sh

# The files lint checks (tools/lint.sh --files): every .c and .h of src/,
# election/, include/ and the tests.
format:
	tools/lint.sh --files | xargs clang-format -i

BENCH_BINS := $(O)/bench/informer-bench $(O)/bench/loader $(O)/bench/awload
$(O)/bench/informer-bench: $(O)/bench/informer_bench.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(O)/bench/loader: $(O)/bench/loader.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(O)/bench/awload: $(O)/bench/awload.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

bench: all $(BENCH_BINS) cluster-build
	@O=$(O) tools/bench.sh

demo: all cluster-build
	@tools/demo.sh

clean:
	rm -rf $(O) build-asan

# --- election test programs (test/election) ---------------------------------
# The C candidate and the client-go candidate the election integration tests
# run as separate processes; the tests find them next to the test binary.
ELECT_CANDIDATE := $(O)/test/election-candidate
ELECT_CLIENTGO := $(O)/test/election-clientgo
ELECT_CLIENTGO_SRCS := $(wildcard test/election/clientgo/*.go) test/election/clientgo/go.mod \
	test/election/clientgo/go.sum

$(ELECT_CANDIDATE): $(O)/test/election/candidate.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(ELECT_CLIENTGO): $(ELECT_CLIENTGO_SRCS)
	@mkdir -p $(dir $@)
	cd test/election/clientgo && CGO_ENABLED=0 go build -trimpath -o $(abspath $@) .

INTEG_DEPS += $(ELECT_CANDIDATE) $(ELECT_CLIENTGO)
# the election failover benchmark runs both candidates (tools/bench_election.py)
bench: $(ELECT_CANDIDATE) $(ELECT_CLIENTGO)
integration: $(INTEG_DEPS)
