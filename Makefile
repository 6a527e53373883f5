# krmpod — build, test, demo, bench. `make` builds the static musl binary build/krmpod;
# `make test` builds everything it needs (dependencies included) and runs all test tiers.
#
# Variants:
#   musl  : build/krmpod            static, stripped, the shipped binary
#   asan  : build/asan/krmpod       glibc + AddressSanitizer + UBSan, for tests
#   glibc : build/glibc/krmpod      glibc, no sanitizers, for valgrind
SHELL := /bin/bash
.DEFAULT_GOAL := all

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
# The commit krmpod is built from, said by `krmpod version`; "-dirty" when the tree has changes
# (git status --porcelain: untracked files count, as they would for `make release`).
KRMPOD_COMMIT ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) || { echo unknown; exit; }; test -z "$$(git status --porcelain 2>/dev/null)" && echo $$c || echo $$c-dirty)
PYTHON := /usr/bin/python3

# src/ is layered folders (docs/architecture.md); every include names its folder.
SRCS := $(sort $(wildcard src/*/*.c))
LIB_SRCS := $(filter-out src/cli/main.c,$(SRCS))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
FMT_FILES = src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/fuzz/*.h

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Wvla -Wstrict-prototypes
# -MMD -MP: each object's header dependencies go to a .d file beside it (included below),
# so editing a header rebuilds exactly what includes it.
BASE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DKRMPOD_VERSION='"$(VERSION)"' -DKRMPOD_COMMIT='"$(KRMPOD_COMMIT)"' -Isrc -MMD -MP

# ---- dependencies (scripts/deps.sh builds them from Debian source packages) ----------
build/deps/musl/.done build/deps/glibc/.done: build/deps/%/.done: scripts/deps.sh
	scripts/deps.sh $*

# Read when a recipe runs, after the order-only .done prerequisite built them.
MUSL_DEPS_CFLAGS = $$(cat build/deps/musl/cflags)
MUSL_DEPS_LIBS = $$(cat build/deps/musl/libs)
GLIBC_DEPS_CFLAGS = $$(cat build/deps/glibc/cflags)
GLIBC_DEPS_LIBS = $$(cat build/deps/glibc/libs)

# ---- musl static (shipped) ------------------------------------------------------------
MUSL_OBJS := $(SRCS:src/%.c=build/musl/obj/%.o)
build/musl/obj/%.o: src/%.c | build/deps/musl/.done
	@mkdir -p $(@D)
	@echo "CC(musl) $<"; musl-gcc $(BASE_CFLAGS) -O2 -g $(MUSL_DEPS_CFLAGS) -c $< -o $@

build/krmpod: $(MUSL_OBJS)
	musl-gcc -static -o $@ $(MUSL_OBJS) $(MUSL_DEPS_LIBS)
	strip $@
	@size=$$(stat -c %s $@); echo "build/krmpod: $$size bytes (limit 4 MiB)"; \
	  test $$size -le 4194304 || { echo "error: build/krmpod is over 4 MiB" >&2; exit 1; }

# ---- glibc builds (tests) --------------------------------------------------------------
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_OBJS := $(SRCS:src/%.c=build/asan/obj/%.o)
ASAN_LIB_OBJS := $(LIB_SRCS:src/%.c=build/asan/obj/%.o)
build/asan/obj/%.o: src/%.c | build/deps/glibc/.done
	@mkdir -p $(@D)
	@echo "CC(asan) $<"; gcc $(BASE_CFLAGS) -O1 -g $(SAN) $(GLIBC_DEPS_CFLAGS) -c $< -o $@
build/asan/krmpod: $(ASAN_OBJS)
	gcc $(SAN) -o $@ $(ASAN_OBJS) $(GLIBC_DEPS_LIBS)

GLIBC_OBJS := $(SRCS:src/%.c=build/glibc/obj/%.o)
build/glibc/obj/%.o: src/%.c | build/deps/glibc/.done
	@mkdir -p $(@D)
	@echo "CC(glibc) $<"; gcc $(BASE_CFLAGS) -O1 -g $(GLIBC_DEPS_CFLAGS) -c $< -o $@
build/glibc/krmpod: $(GLIBC_OBJS)
	gcc -o $@ $(GLIBC_OBJS) $(GLIBC_DEPS_LIBS)

# Header dependencies written by -MMD (absent before the first build).
-include $(wildcard build/musl/obj/*/*.d build/asan/obj/*/*.d build/glibc/obj/*/*.d build/asan/unit/*.d build/asan/*.d)

# ---- unit tests (C, ASan+UBSan) --------------------------------------------------------
# Test-support modules (tests/unit/*.c not named test_*) are compiled once and linked into
# the unit tests that name them below: the pattern rule links every unit object among its
# prerequisites.
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/asan/unit/%)
build/asan/unit/%.o: tests/unit/%.c | build/deps/glibc/.done
	@mkdir -p $(@D)
	@echo "CC(unit) $<"; gcc $(BASE_CFLAGS) -O1 -g $(SAN) $(GLIBC_DEPS_CFLAGS) -Itests/unit -c $< -o $@
build/asan/unit/%: tests/unit/%.c $(ASAN_LIB_OBJS) | build/deps/glibc/.done
	@mkdir -p $(@D)
	@echo "CC(unit) $@"; gcc $(BASE_CFLAGS) -O1 -g $(SAN) $(GLIBC_DEPS_CFLAGS) -Itests/unit -o $@ $< $(filter build/asan/unit/%.o,$^) $(ASAN_LIB_OBJS) $(GLIBC_DEPS_LIBS)
# The scripted HTTP server (tests/unit/fake_http.h).
build/asan/unit/test_kube_http build/asan/unit/test_kube_stream build/asan/unit/test_registry: build/asan/unit/fake_http.o

# A driver for the registry client (src/registry/) without krmpod's CLI, for the tests
# against a real registry (tests/registry_tests).
build/asan/registry-fetch: tests/registry/registry_fetch.c $(ASAN_LIB_OBJS) | build/deps/glibc/.done
	@mkdir -p $(@D)
	@echo "CC(asan) $@"; gcc $(BASE_CFLAGS) -O1 -g $(SAN) $(GLIBC_DEPS_CFLAGS) -o $@ $< $(ASAN_LIB_OBJS) $(GLIBC_DEPS_LIBS)

.PHONY: all asan glibc unit test test-deps integration kubesim-test registry-test conformance-record manifests-test e2e-selftest realkube-test demo bench fmt fmt-check lint clean distclean image-local
all: build/krmpod
asan: build/asan/krmpod
glibc: build/glibc/krmpod

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# Tools the test suite needs (apt-get, only when missing).
test-deps:
	scripts/install-test-deps.sh

kubesim-test: test-deps
	$(PYTHON) -m pytest -q tests/kubesim_tests

# The registry client against a real registry (Debian's docker-registry, distribution 2.8)
# with TLS, htpasswd and token authentication, and against a local HTTPS server.
registry-test: test-deps build/asan/registry-fetch
	$(PYTHON) -m pytest -q tests/registry_tests

# manifests/ (rendered with kubectl kustomize) and the Helm values agree with the design.
manifests-test: test-deps build/krmpod
	$(PYTHON) -m pytest -q tests/manifests

# The kind scripts cannot run here (no kind, no registry): bash -n, shellcheck, and every
# file they name exists (e2e/selftest.sh). Their scenario runs against kubesim in
# tests/integration/test_generate.py.
e2e-selftest: test-deps
	bash e2e/selftest.sh

# Integration tests drive the built binaries with real kustomize (kubectl kustomize) against
# kubesim: the ASan build, the glibc build under valgrind (test_valgrind.py), then the static
# binary.
#
# Each pass runs in INTEGRATION_WORKERS pytest-xdist workers, each with its own kubesim and
# state directory (the tests mostly wait on kubesim's simulated kubelet: 4 workers on 2 cores
# take a pass from ~140 s to ~45 s). INTEGRATION_WORKERS=0 runs a pass in one process.
# test_kubelet_timing.py asserts what happens between a container's exit and the next relist
# within milliseconds: it runs alone after each pass (under the other workers' load a
# function meant to end before krmpod attaches was seen attached to).
INTEGRATION_WORKERS ?= 4
XDIST = -n $(INTEGRATION_WORKERS) --ignore=tests/integration/test_kubelet_timing.py
TIMING = tests/integration/test_kubelet_timing.py
integration: test-deps build/asan/krmpod build/krmpod build/glibc/krmpod
	KRMPOD_BIN=$(CURDIR)/build/asan/krmpod $(PYTHON) -m pytest -q $(XDIST) tests/integration
	KRMPOD_BIN=$(CURDIR)/build/asan/krmpod $(PYTHON) -m pytest -q $(TIMING)
	KRMPOD_VALGRIND=1 KRMPOD_BIN=$(CURDIR)/build/glibc/krmpod $(PYTHON) -m pytest -q tests/integration/test_valgrind.py
	KRMPOD_BIN=$(CURDIR)/build/krmpod $(PYTHON) -m pytest -q $(XDIST) tests/integration
	KRMPOD_BIN=$(CURDIR)/build/krmpod $(PYTHON) -m pytest -q $(TIMING)
	KRMPOD_TEST_MODE=exec KRMPOD_BIN=$(CURDIR)/build/krmpod $(PYTHON) -m pytest -q $(XDIST) tests/integration
	KRMPOD_TEST_MODE=exec KRMPOD_BIN=$(CURDIR)/build/krmpod $(PYTHON) -m pytest -q $(TIMING)

# The real-cluster tier: krmpod installed from manifests/ on the project's real Kubernetes
# (scripts/realkube: upstream Kubernetes, CoreDNS and kube-router built from the Go module
# proxy by scripts/build-peers.sh; started here unless it runs already, and then stopped
# again), with locally built images, under upstream Argo CD (built from the Go module proxy,
# installed from its own install.yaml) and driven as Argo CD drives the sidecar
# (tests/realkube).
REALKUBE ?= $(CURDIR)/scripts/realkube
build/realkube/cmp-hook-run: tests/realkube/cmp-hook-run.c
	@mkdir -p $(@D)
	musl-gcc -static -std=gnu11 $(WARN) -D_GNU_SOURCE -O2 -o $@ $<

# tests/realkube_lifecycle first: scripts/realkube's own start/stop promises (they stop the
# cluster, and start it again at their end when it ran before).
realkube-test: test-deps build/krmpod build/realkube/cmp-hook-run
	REALKUBE=$(REALKUBE) $(PYTHON) -m pytest -q tests/realkube_lifecycle
	REALKUBE=$(REALKUBE) KRMPOD_BIN=$(CURDIR)/build/krmpod $(PYTHON) -m pytest -q tests/realkube

test: lint unit fuzz-replay kubesim-test registry-test manifests-test e2e-selftest integration soak-short realkube-test
	@echo "make test: all tiers passed"

demo: test-deps build/krmpod
	scripts/demo.sh

build/bench/measure: bench/measure.c
	@mkdir -p $(@D)
	gcc -O2 -Wall -Wextra -Werror -o $@ $<

# kubesim (with the kubelet's 1 s relist), then the real cluster (scripts/realkube; started
# and stopped again unless it runs already), then krmpod under upstream Argo CD on it, in one
# run.
bench: test-deps build/krmpod build/bench/measure build/realkube/cmp-hook-run
	$(PYTHON) bench/bench.py --krmpod build/krmpod
	$(PYTHON) bench/realkube_bench.py --krmpod build/krmpod
	$(PYTHON) bench/argocd_bench.py --krmpod build/krmpod
	$(PYTHON) bench/realfns_bench.py --krmpod build/krmpod

# Records the real API server's answers to krmpod's requests into tests/conformance/data/
# (needs root and scripts/realkube: it starts the cluster if it is not running, never stops
# it). The replay against kubesim is part of kubesim-test.
conformance-record: test-deps
	$(REALKUBE) start >/dev/null
	eval "$$($(REALKUBE) env)" && $(PYTHON) tests/conformance/record.py

lint: test-deps
	scripts/lint.sh

fmt: test-deps
	clang-format -i $(FMT_FILES)

fmt-check: test-deps
	clang-format --dry-run --Werror $(FMT_FILES)

clean:
	rm -rf build/musl build/asan build/glibc build/krmpod

distclean:
	rm -rf build

include tests/soak/soak.mk
include tests/fuzz/fuzz.mk
include release/release.mk
include release/arm64.mk

# The Argo CD sidecar image, built from locally made base images (debootstrap, docker import;
# no container registry needed) and tested against kubesim: scripts/image-local.sh.
image-local:
	scripts/image-local.sh
