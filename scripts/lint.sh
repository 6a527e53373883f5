#!/usr/bin/env bash
# Mechanical style checks: banned C functions, the shape of src/ (scripts/layers.py: layers,
# circles, settings and REST paths in their one module, no goto; tests/lint/test_layers.sh
# shows it fails on each), the commands the tests and scripts run (scripts/lint_commands.py),
# clang-format and shellcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# A check's tool is required, never skipped: scripts/install-test-deps.sh installs each
# (`make lint` runs it first).
have() {
	command -v "$1" >/dev/null && return 0
	echo "lint: $1 is not installed: run scripts/install-test-deps.sh (or 'make lint', which does)" >&2
	status=1
	return 1
}
if grep -rnE '\b(sprintf|vsprintf|strcpy|strcat|strtok|atoi|atol|gets|system)[[:space:]]*\(' \
	src tests/unit --include='*.c' --include='*.h'; then
	echo "lint: banned functions above (use snprintf, memcpy, strtok_r, strtol...)" >&2
	status=1
fi
# The wall clock is read in base/clock.c only (epoch_ms, file_clock_now), so that the
# tests' KRMPOD_CLOCK_OFFSET moves every read that meets another machine's clock.
if grep -rnE '\btime[[:space:]]*\([[:space:]]*NULL[[:space:]]*\)|CLOCK_REALTIME|gettimeofday' \
	src --include='*.c' | grep -v '^src/base/clock\.c:'; then
	echo "lint: the wall clock read above outside src/base/clock.c (use epoch_ms/epoch_s)" >&2
	status=1
fi
if ! /usr/bin/python3 scripts/layers.py --check-doc docs/architecture.md; then
	echo "lint: src/ breaks its layering (docs/architecture.md, \"Layers\")" >&2
	status=1
fi
if ! bash tests/lint/test_layers.sh; then
	echo "lint: scripts/layers.py no longer catches what it must" >&2
	status=1
fi
# Every command the tests and scripts run is provided: by an install script, a fresh machine
# or a prerequisite the README names (scripts/lint_commands.py; tests/lint/test_commands.sh
# shows it fails on each kind of gap).
if ! /usr/bin/python3 scripts/lint_commands.py; then
	echo "lint: the tests or scripts run a command nothing provides (above)" >&2
	status=1
fi
if ! bash tests/lint/test_commands.sh; then
	echo "lint: scripts/lint_commands.py no longer catches what it must" >&2
	status=1
fi
if have clang-format; then
	if ! clang-format --dry-run --Werror src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h 2>/tmp/krmpod-fmt.$$; then
		head -40 /tmp/krmpod-fmt.$$ >&2
		echo "lint: run 'make fmt'" >&2
		status=1
	fi
	rm -f /tmp/krmpod-fmt.$$
fi
# Shell scripts: shellcheck (installed by scripts/install-test-deps.sh). deps.sh at warning
# level: its `build && install || die` chains are meant (SC2015, info), and editing it would
# rebuild the C dependencies. e2e/ has its own check (e2e/selftest.sh).
if have shellcheck; then
	shell_scripts="$(grep -d skip -lE '^#!(/usr/bin/env bash|/bin/(ba)?sh)' scripts/* | grep -v '^scripts/deps\.sh$') tests/lint/test_layers.sh tests/lint/test_commands.sh"
	# shellcheck disable=SC2086 # file names without spaces
	if ! shellcheck $shell_scripts || ! shellcheck -S warning scripts/deps.sh; then
		echo "lint: shellcheck found problems above" >&2
		status=1
	fi
fi
[ $status -eq 0 ] && echo "lint: ok"
exit $status
