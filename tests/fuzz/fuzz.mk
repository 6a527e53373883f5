# tests/fuzz/fuzz.mk — libFuzzer targets for the parsers that read untrusted bytes
# (tests/fuzz/README.md). Included by the Makefile.
#
#   make build/fuzz/NAME          one target (tests/fuzz/fuzz_NAME.c)
#   make fuzz [FUZZ_SECONDS=N]    every target for N seconds (default 60), one after the other;
#                                 new corpus entries go to build/fuzz/new/NAME, crashes to
#                                 build/fuzz/artifacts/NAME/, executions to build/fuzz/report.txt
#   make fuzz-replay              every target once over tests/fuzz/corpus/NAME and
#                                 tests/fuzz/crashes/NAME (part of `make test`)
#
# Built with Debian's clang (14 on bookworm) and its libFuzzer (libclang-rt-dev), both
# installed by scripts/install-test-deps.sh (the test-deps step every compile here waits
# for). src/ is compiled again for fuzzing (build/fuzz/obj/) with coverage instrumentation
# and the same sanitizers as the asan build.

FUZZ_CC := /usr/bin/clang
FUZZ_TARGETS := docker_args kubeconfig json ws_frame kube_status tar_unpack kustomization \
	pod_template catalog registry yaml_edit agent sign
FUZZ_SECONDS ?= 60
FUZZ_BINS := $(FUZZ_TARGETS:%=build/fuzz/%)
FUZZ_OBJS := $(LIB_SRCS:src/%.c=build/fuzz/obj/%.o)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = $(BASE_CFLAGS) -O1 -g $(FUZZ_SAN) $(GLIBC_DEPS_CFLAGS)

# Options every run gets: no input runs longer than 10 s; stdin is /dev/null (below), so a
# path in an input that names it cannot block.
FUZZ_OPTS := -timeout=10 -print_final_stats=1
# Per target (as FUZZ_OPTS_<name>): the targets that write each input as files cap its size.
# Memory stays libFuzzer's default (-rss_limit_mb=2048, -malloc_limit_mb the same), which
# every named limit of src/base/size_limits.h a parser may fill (16 MiB at most) fits in.
FUZZ_OPTS_tar_unpack := -max_len=65536
FUZZ_OPTS_kustomization := -max_len=16384
FUZZ_OPTS_kubeconfig := -max_len=16384

build/fuzz/obj/%.o: src/%.c | build/deps/glibc/.done test-deps
	@mkdir -p $(@D)
	@echo "CC(fuzz) $<"; $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BINS): build/fuzz/%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS) | build/deps/glibc/.done test-deps
	@mkdir -p $(@D)
	@echo "CC(fuzz) $@"; $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< \
		$(FUZZ_OBJS) $(GLIBC_DEPS_LIBS)

-include $(wildcard build/fuzz/obj/*/*.d build/fuzz/*.d)

.PHONY: fuzz fuzz-build fuzz-replay
fuzz-build: $(FUZZ_BINS)

# One target at a time (the machine is shared). A crash does not stop the others; the run
# fails at the end when any target crashed. `make fuzz FUZZ_TARGETS=json` runs one.
fuzz: test-deps $(FUZZ_BINS)
	@mkdir -p build/fuzz; : > build/fuzz/report.txt; failed=""; \
	run() { \
		t=$$1; shift; log=build/fuzz/$$t.log; \
		mkdir -p build/fuzz/new/$$t build/fuzz/artifacts/$$t; \
		echo "== fuzz $$t for $(FUZZ_SECONDS) s (log: $$log)"; \
		build/fuzz/$$t $(FUZZ_OPTS) "$$@" $(FUZZ_EXTRA_OPTS) -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=build/fuzz/artifacts/$$t/ build/fuzz/new/$$t \
			tests/fuzz/corpus/$$t </dev/null >$$log 2>&1; \
		rc=$$?; \
		execs=$$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' $$log | tail -1); \
		[ -n "$$execs" ] || execs=$$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' $$log | tail -1); \
		secs=$$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' $$log | tail -1); \
		status=ok; \
		[ $$rc -eq 0 ] || { status="CRASH (exit $$rc, see $$log)"; failed="$$failed $$t"; }; \
		printf '%-14s %12s executions in %5s s  %s\n' $$t "$${execs:-?}" "$${secs:-?}" \
			"$$status" | tee -a build/fuzz/report.txt; \
	}; \
	$(foreach t,$(FUZZ_TARGETS),run $(t) $(FUZZ_OPTS_$(t));) \
	if [ -n "$$failed" ]; then \
		echo "fuzz: crashes in:$$failed (inputs in build/fuzz/artifacts/)" >&2; exit 1; \
	fi

# Every corpus and crash input once; any crash, leak or sanitizer report fails.
fuzz-replay: test-deps $(FUZZ_BINS)
	@replay() { \
		t=$$1; shift; log=build/fuzz/$$t.replay.log; \
		files=$$(find tests/fuzz/corpus/$$t tests/fuzz/crashes/$$t -type f ! -name .gitkeep \
			| sort); \
		[ -n "$$files" ] || { echo "fuzz-replay: no inputs for $$t" >&2; return 1; }; \
		if build/fuzz/$$t $(FUZZ_OPTS) "$$@" $$files </dev/null >$$log 2>&1; then \
			echo "fuzz-replay: $$t: $$(echo "$$files" | wc -l) inputs ok"; \
		else \
			tail -40 $$log >&2; echo "fuzz-replay: $$t failed ($$log)" >&2; return 1; \
		fi; \
	}; \
	$(foreach t,$(FUZZ_TARGETS),replay $(t) $(FUZZ_OPTS_$(t)) &&) true
