# linux/arm64 (issue 28): krmpod cross-compiled with Debian's aarch64 gcc against musl, with the
# same pinned C dependencies as build/krmpod, and tested here under qemu-user. Included by the
# Makefile (after SRCS, LIB_SRCS, UNIT_SRCS, BASE_CFLAGS, VERSION and KRMPOD_COMMIT).
#
#   make build/arm64/krmpod   static, stripped; the same sources, flags and version as build/krmpod
#   make arm64-unit           build/arm64/unit/*: the C unit tests for arm64 (musl, no sanitizers)
#   make arm64-test           (a) every arm64 unit test under qemu-aarch64-static, (b) `krmpod
#                             version` under qemu against build/krmpod's, (c) tests/arm64: generate
#                             and a shim `docker run` against kubesim, arm64 under qemu byte for
#                             byte against build/krmpod
#
# The compiler is build/cross/arm64/bin/aarch64-linux-musl-gcc: aarch64-linux-gnu-gcc with the
# specs of Debian's musl-dev:arm64, made by `scripts/deps.sh musl-arm64` together with the
# dependencies (build/deps/musl-arm64). Host tools: scripts/install-cross-deps.sh.
# qemu-aarch64-static is always invoked explicitly: binfmt_misc registration (which a
# container may lack) is never relied on.

ARM64_CC := $(CURDIR)/build/cross/arm64/bin/aarch64-linux-musl-gcc
ARM64_STRIP := aarch64-linux-gnu-strip
ARM64_QEMU := qemu-aarch64-static

# A missing driver (build/cross removed) makes the dependencies again as well: deps.sh makes both.
build/deps/musl-arm64/.done: scripts/deps.sh scripts/install-cross-deps.sh $(if $(wildcard $(ARM64_CC)),,arm64-force)
	scripts/deps.sh musl-arm64

# Read when a recipe runs, after the order-only .done prerequisite built them.
ARM64_DEPS_CFLAGS = $$(cat build/deps/musl-arm64/cflags)
ARM64_DEPS_LIBS = $$(cat build/deps/musl-arm64/libs)

ARM64_OBJS := $(SRCS:src/%.c=build/arm64/obj/%.o)
ARM64_LIB_OBJS := $(LIB_SRCS:src/%.c=build/arm64/obj/%.o)
build/arm64/obj/%.o: src/%.c | build/deps/musl-arm64/.done
	@mkdir -p $(@D)
	@echo "CC(arm64) $<"; $(ARM64_CC) $(BASE_CFLAGS) -O2 -g $(ARM64_DEPS_CFLAGS) -c $< -o $@

# The objects that print the version or the commit (`krmpod version`, `docker version`, the
# User-Agent) are compiled again when either changes: build/arm64/version.stamp holds both and
# is rewritten only then, so its time moves only then.
ARM64_VERSION_OBJS := $(addprefix build/arm64/obj/,cli/cmd_version.o cli/cmd_docker.o base/http_xfer.o)
$(ARM64_VERSION_OBJS): build/arm64/version.stamp
build/arm64/version.stamp: arm64-version-stamp-check
	@mkdir -p $(@D); s='$(VERSION) $(KRMPOD_COMMIT)'; [ "$$(cat $@ 2>/dev/null)" = "$$s" ] || echo "$$s" >$@
arm64-version-stamp-check:

build/arm64/krmpod: $(ARM64_OBJS)
	$(ARM64_CC) -static -o $@ $(ARM64_OBJS) $(ARM64_DEPS_LIBS)
	$(ARM64_STRIP) $@
	@readelf -h $@ | grep -q 'Machine: *AArch64' || { echo "error: $@ is not an aarch64 executable" >&2; exit 1; }
	@! readelf -l $@ | grep -q INTERP || { echo "error: $@ is not static (it names a program interpreter)" >&2; exit 1; }
	@size=$$(stat -c %s $@); echo "$@: $$size bytes (limit 4 MiB)"; \
	  test $$size -le 4194304 || { echo "error: $@ is over 4 MiB" >&2; exit 1; }

# ---- unit tests for arm64 --------------------------------------------------------------
# As the Makefile's UNIT_BINS, without sanitizers, static (qemu-user then needs no arm64
# loader or libraries). A test-support module (tests/unit/NAME.c, not test_*) is linked into
# every unit test that includes its NAME.h (fake_http.o: the scripted HTTP server).
ARM64_UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/arm64/unit/%)
ARM64_UNIT_SUPPORT := $(filter-out test_%,$(notdir $(basename $(wildcard tests/unit/*.c))))
build/arm64/unit/%.o: tests/unit/%.c | build/deps/musl-arm64/.done
	@mkdir -p $(@D)
	@echo "CC(arm64 unit) $<"; $(ARM64_CC) $(BASE_CFLAGS) -O2 -g $(ARM64_DEPS_CFLAGS) -Itests/unit -c $< -o $@
build/arm64/unit/%: tests/unit/%.c $(ARM64_LIB_OBJS) | build/deps/musl-arm64/.done
	@mkdir -p $(@D)
	@echo "CC(arm64 unit) $@"; $(ARM64_CC) -static $(BASE_CFLAGS) -O2 -g $(ARM64_DEPS_CFLAGS) -Itests/unit -o $@ $< $(filter build/arm64/unit/%.o,$^) $(ARM64_LIB_OBJS) $(ARM64_DEPS_LIBS)
$(foreach m,$(ARM64_UNIT_SUPPORT),$(eval $(patsubst tests/unit/%.c,build/arm64/unit/%,$(shell grep -l '^#include "$(m).h"' $(UNIT_SRCS))): build/arm64/unit/$(m).o))

-include $(wildcard build/arm64/obj/*/*.d build/arm64/unit/*.d)

.PHONY: arm64 arm64-unit arm64-test arm64-cross-deps arm64-version-stamp-check arm64-force
arm64-force:
arm64: build/arm64/krmpod
arm64-unit: $(ARM64_UNIT_BINS)

arm64-cross-deps:
	scripts/install-cross-deps.sh

# Unit tests that execute their own binary again (fork, then execv of /proc/self/exe):
# test_agent_serve is its own `krmpod call`, as `krmpod serve` runs one per call in a pod.
# Under qemu-user that child execve of an arm64 program needs the kernel to run arm64 ELF
# files itself (binfmt_misc registration of qemu-aarch64, or an arm64 host); without that it
# fails with ENOEXEC (exit 126 in every session test). They run when the kernel can; otherwise
# arm64-test names them as not run, and why.
ARM64_UNIT_SELF_EXEC := build/arm64/unit/test_agent_serve
ARM64_UNIT_TIMEOUT ?= 600

# (a) Every unit test runs under qemu (each at most ARM64_UNIT_TIMEOUT seconds); the failures
# are named together at the end. (b) The whole `krmpod version` output of both builds: the
# same release, commit and libraries (the one part allowed to differ is libwebsockets' build
# suffix, the git commit its CMake found when the dependencies were built; it is shown when it
# does). (c) tests/arm64 with pytest.
arm64-test: arm64-cross-deps test-deps build/arm64/krmpod build/krmpod $(ARM64_UNIT_BINS)
	@t0=$$(date +%s); failed=""; notrun=""; n=0; \
	if build/arm64/krmpod version >/dev/null 2>&1; then native=1; else native=0; fi; \
	for t in $(ARM64_UNIT_BINS); do \
	  if [ $$native = 0 ] && [[ " $(ARM64_UNIT_SELF_EXEC) " == *" $$t "* ]]; then notrun="$$notrun $$t"; continue; fi; \
	  s=$$(date +%s); echo "== $(ARM64_QEMU) $$t"; n=$$((n + 1)); \
	  if timeout $(ARM64_UNIT_TIMEOUT) $(ARM64_QEMU) $$t; then echo "   ok ($$(($$(date +%s) - s)) s)"; \
	  else rc=$$?; echo "   FAILED: exit $$rc$$([ $$rc = 124 ] && echo ", killed after $(ARM64_UNIT_TIMEOUT) s")" >&2; failed="$$failed $$t"; fi; \
	done; \
	echo "arm64 unit tests under qemu: $$n run in $$(($$(date +%s) - t0)) s"; \
	for t in $$notrun; do \
	  echo "   NOT RUN: $$t: it executes itself again (execv of /proc/self/exe) and this kernel cannot" \
	    "run an arm64 program directly (no binfmt_misc entry for qemu-aarch64); it runs where one is registered or on arm64"; \
	done; \
	if [ -n "$$failed" ]; then echo "arm64-test: unit tests failed under $(ARM64_QEMU):$$failed" >&2; exit 1; fi
	@a=$$(build/krmpod version) && b=$$($(ARM64_QEMU) build/arm64/krmpod version) || { echo "arm64-test: krmpod version failed" >&2; exit 1; }; \
	norm() { sed -E 's/(libwebsockets [0-9.]+)-[^,]*/\1-BUILD/'; }; \
	printf '%s\n' "$$b" | sed 's/^/   arm64: /'; \
	if [ "$$(printf '%s\n' "$$a" | norm)" != "$$(printf '%s\n' "$$b" | norm)" ]; then \
	  echo "arm64-test: build/arm64/krmpod version under qemu differs from build/krmpod version:" >&2; \
	  diff <(printf '%s\n' "$$a") <(printf '%s\n' "$$b") >&2; \
	  echo "(both must be built from the same tree: make build/krmpod build/arm64/krmpod)" >&2; exit 1; \
	fi; \
	[ "$$a" = "$$b" ] || echo "   note: libwebsockets' build suffix differs (amd64: $$(printf '%s\n' "$$a" | grep -o 'libwebsockets [^,]*'))"; \
	echo "arm64 krmpod version under qemu: the same as build/krmpod's"
	KRMPOD_BIN=$(CURDIR)/build/krmpod KRMPOD_ARM64_BIN=$(CURDIR)/build/arm64/krmpod KRMPOD_QEMU=$(ARM64_QEMU) \
	  $(PYTHON) -m pytest -q tests/arm64
