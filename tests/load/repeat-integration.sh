#!/usr/bin/env bash
# Runs the integration passes of `make integration` N times in a row, to find the tests that
# depend on timing (docs/testing.md, "Repeated integration passes"). Run it on a loaded
# machine, with a CPU-heavy build beside it (scripts/deps.sh, a Go build of the peers).
#
#   tests/load/repeat-integration.sh N OUTDIR
#
# The binaries are copied first (build/asan/krmpod, build/glibc/krmpod, build/krmpod: build
# them with `make asan glibc all`), so a rebuild during the runs does not change what is
# tested. Each pass's output goes to OUTDIR/run-K-PASS.log; OUTDIR/summary.tsv gets one line
# per pass (run, pass, exit code, seconds, failed tests). Exits non-zero when any pass
# failed, after all N runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:?usage: tests/load/repeat-integration.sh N OUTDIR}
out=${2:?usage: tests/load/repeat-integration.sh N OUTDIR}
case $n in '' | *[!0-9]*) echo "repeat-integration: N must be a number, not '$n'" >&2; exit 2 ;; esac
for b in build/asan/krmpod build/glibc/krmpod build/krmpod; do
	[ -x "$b" ] || { echo "repeat-integration: $b is missing: run 'make asan glibc all' first" >&2; exit 2; }
done
mkdir -p "$out/bin/asan" "$out/bin/glibc" "$out/bin/musl"
cp build/asan/krmpod "$out/bin/asan/krmpod"
cp build/glibc/krmpod "$out/bin/glibc/krmpod"
cp build/krmpod "$out/bin/musl/krmpod"
out=$(cd "$out" && pwd)
py=/usr/bin/python3
xdist=(-n "${INTEGRATION_WORKERS:-4}" --ignore=tests/integration/test_kubelet_timing.py)
timing=tests/integration/test_kubelet_timing.py
printf 'run\tpass\texit\tseconds\tfailed\n' >"$out/summary.tsv"
failed=0
pass() { # run name env... -- pytest args...
	local run=$1 name=$2 envs=() t0 rc
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	t0=$SECONDS
	rc=0
	env "${envs[@]}" "$py" -m pytest -q -rf -p no:cacheprovider "$@" >"$out/run-$run-$name.log" 2>&1 || rc=$?
	local fails
	fails=$(sed -n 's/^FAILED \([^ ]*\).*/\1/p; s/^ERROR \([^ ]*\).*/\1/p' "$out/run-$run-$name.log" | tr '\n' ' ')
	printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$name" "$rc" $((SECONDS - t0)) "$fails" >>"$out/summary.tsv"
	[ $rc -eq 0 ] || failed=$((failed + 1))
}
for run in $(seq 1 "$n"); do
	pass "$run" asan KRMPOD_BIN="$out/bin/asan/krmpod" -- "${xdist[@]}" tests/integration
	pass "$run" asan-timing KRMPOD_BIN="$out/bin/asan/krmpod" -- "$timing"
	pass "$run" valgrind KRMPOD_VALGRIND=1 KRMPOD_BIN="$out/bin/glibc/krmpod" -- tests/integration/test_valgrind.py
	pass "$run" static KRMPOD_BIN="$out/bin/musl/krmpod" -- "${xdist[@]}" tests/integration
	pass "$run" static-timing KRMPOD_BIN="$out/bin/musl/krmpod" -- "$timing"
	pass "$run" exec KRMPOD_TEST_MODE=exec KRMPOD_BIN="$out/bin/musl/krmpod" -- "${xdist[@]}" tests/integration
	pass "$run" exec-timing KRMPOD_TEST_MODE=exec KRMPOD_BIN="$out/bin/musl/krmpod" -- "$timing"
	echo "repeat-integration: run $run of $n done, $failed failed passes so far" >&2
done
cat "$out/summary.tsv" >&2
[ $failed -eq 0 ]
